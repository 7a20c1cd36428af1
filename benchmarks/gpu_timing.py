"""GPU timing shared by the benchmarks and the tuning tools (tools/tune_*.py)."""

import os

import torch

L2_FLUSH_BYTES = 256 * 1024 * 1024  # well above the H100/H200 L2 (50-60 MB)


def make_l2_flush(method=None):
    """A function that evicts the L2 cache, to run before each timed call so
    that no input is read from L2.

    The default ("read") reads a buffer larger than L2 and leaves it holding
    clean lines: the timed kernel starts from a cold L2 that owes nothing, as
    under Nsight Compute's default cache control (flush and invalidate).
    "write" (NVFUSE_L2_FLUSH=write; the method until 2026-11-22) zeroes the
    buffer instead, which leaves ~50 MB of dirty lines that the timed kernel
    writes back as it reads: at 64 MB that is the flush's traffic billed to
    the kernel (cross-entropy forward bf16: 29.2 us under ncu, 35.4 us
    timed so), while the 1 GiB copy it is compared with pays it 2.5%."""
    method = method or os.environ.get("NVFUSE_L2_FLUSH", "read")
    if method not in ("read", "write"):
        raise ValueError(f"NVFUSE_L2_FLUSH must be 'read' or 'write', got {method!r}")
    buffer = torch.zeros(L2_FLUSH_BYTES // 4, dtype=torch.float32, device="cuda")
    total = torch.empty((), dtype=torch.float32, device="cuda")

    def flush():  # returns None: pytest-benchmark's setup must
        if method == "write":
            buffer.zero_()
        else:
            torch.sum(buffer, dim=0, out=total)

    return flush


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
