"""Where one zoo model's step spends its time under backend="nvfuse", on a
GPU machine: the step time, the step's kernels by GPU time, the ATen ops by
device time, the generated kernels that declined their inputs (each
such segment runs op by op on the reference evaluator), the host's
Python functions by own time over a few steps (cProfile), and nvfuse's
own host steps over ten more (NVFUSE_DUMP=host_time's table, turned on
only then so that no compile is in its averages), for
steps that are host-bound. Five steps run first, as the model benchmark's
warmup: the first ones compile and grow the caching allocator's pool.

    python3 tools/zoo_profile.py resnet training [nvfuse|nvfuse-channels-last|nvfuse-nchw|inductor]

(nvfuse-channels-last, nvfuse-nchw: the backend with its channels_last
option True and False, as the model benchmark names them.)
"""

import collections
import cProfile
import io
import logging
import pstats
import sys

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, ".")
import nvfuse  # noqa: E402
import nvfuse.dynamo  # noqa: E402,F401 (registers the backend)
from workloads.gpu_timing import median_event_time_ms  # noqa: E402
from workloads.model_zoo import build  # noqa: E402


def step_of(name, training, backend):
    torch._dynamo.reset()
    zoo = build(name, "bench")
    batch = zoo.bench_batch("cuda", torch.bfloat16, training)
    if backend in ("nvfuse-channels-last", "nvfuse-nchw"):
        options = {"channels_last": backend == "nvfuse-channels-last"}
        compiled = torch.compile(zoo.model, backend="nvfuse", options=options)
    else:
        compiled = torch.compile(zoo.model, backend=backend)
    return zoo.step(compiled, batch, training)


def step_ms(step, steps=10):
    """The median step time, as the model benchmark reports it."""
    return median_event_time_ms(step, flush=lambda: None, rounds=steps, warmup=0)


def print_kernels(prof, top=22):
    kernels = collections.defaultdict(lambda: [0, 0.0])
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            entry = kernels[event.name[:90]]
            entry[0] += 1
            entry[1] += event.device_time_total / 1000
    total = sum(ms for _, ms in kernels.values())
    print(f"GPU kernel time {total:.2f} ms, {sum(n for n, _ in kernels.values())} kernels")
    for name, (count, ms) in sorted(kernels.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"  {ms:7.3f} ms {count:5d}x {name}")
    print("ATen ops by device time:")
    for avg in sorted(prof.key_averages(), key=lambda a: -a.device_time_total)[:15]:
        if avg.key.startswith("aten::") and avg.device_time_total >= 300:
            print(f"  {avg.device_time_total / 1000:7.3f} ms {avg.count:4d}x {avg.key}")


def declined_launches(step):
    """The launch dump's records of kernels that declined, over one step."""
    records = []

    class Collect(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())

    logger = logging.getLogger("nvfuse")
    handler = Collect()
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    nvfuse.set_dump("launch")
    try:
        step()
        torch.cuda.synchronize()
    finally:
        nvfuse.set_dump("")
        logger.removeHandler(handler)
    return [r for r in records if "declined" in r]


def print_host_functions(step, steps=5, top=40):
    """The Python functions the host spends its time in over `steps` steps,
    by own time and with their callees: what a host-bound step's launches
    cost besides the launches, and which layer (autograd, AOTAutograd's
    wrappers, the graph's code) they are spent under."""
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    profiler.disable()
    for order, what in (("tottime", "own time"), ("cumulative", "time with callees")):
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats(order).print_stats(top)
        print(f"host functions over {steps} steps, by {what}:")
        print("\n".join(text.getvalue().splitlines()[4:]))


def main():
    name, step_kind = sys.argv[1], sys.argv[2]
    backend = sys.argv[3] if len(sys.argv) > 3 else "nvfuse"
    step = step_of(name, step_kind == "training", backend)
    for _ in range(5):
        step()
    torch.cuda.synchronize()
    print(f"{name} {step_kind} ({backend}): {step_ms(step):.2f} ms/step")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    print_kernels(prof)
    nvfuse_backend = backend.startswith("nvfuse")
    if nvfuse_backend:
        declined = declined_launches(step)
        print(f"{len(declined)} declined launches in a step")
        for record in declined[:3]:
            print(record[:900])
    print_host_functions(step)
    if nvfuse_backend:
        nvfuse._C.take_host_times()  # drop what earlier calls timed, if any
        nvfuse.set_dump("host_time")
        for _ in range(10):
            step()
        torch.cuda.synchronize()
        nvfuse.set_dump("")
        print("nvfuse's host steps over 10 steps:")
        print(nvfuse._C.take_host_times())


if __name__ == "__main__":
    main()
