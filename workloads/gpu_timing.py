"""GPU timing shared by the benchmarks and the tuning tools (tools/tune_*.py)."""

import torch


def median_event_time_ms(fn, flush, rounds=20, warmup=3):
    """Median CUDA-event time of fn() in ms, with flush() (outside the timed
    region) before every timed call."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(rounds):
        flush()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def copy_gbps(flush, copy_bytes=1 << 30, rounds=20):
    """GB/s of a device-to-device copy of copy_bytes (bytes read + written),
    the ceiling the benchmarks and tuning tools report against."""
    buffers = [torch.empty(copy_bytes, dtype=torch.uint8, device="cuda") for _ in range(2)]
    ms = median_event_time_ms(lambda: buffers[1].copy_(buffers[0]), flush, rounds=rounds)
    buffers.clear()
    torch.cuda.empty_cache()
    return 2 * copy_bytes / (ms * 1e-3) / 1e9


def executor_fn(executor, inputs, torch_fn, make_fd):
    """The call that a benchmark times: the nvfuse definition (all its
    outputs), eager torch_fn, or a fresh torch.compile of torch_fn (fresh, so
    dynamo never hits its recompile limit across cases)."""
    if executor == "nvfuse":
        fd = make_fd()
        return lambda: fd.execute(inputs)
    if executor == "eager":
        return lambda: torch_fn(*inputs)
    torch._dynamo.reset()
    compiled = torch.compile(torch_fn, dynamic=False)
    return lambda: compiled(*inputs)
