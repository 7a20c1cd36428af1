"""Whether a zoo model's step is host-bound, and where its host time goes,
on a GPU machine, for backend="nvfuse" and Inductor in one process:

- the median over ten steps of the host's enqueue time (the step's call
  returning) against its wall time (the GPU finished): a step whose
  enqueue time is about its wall time is bound by the host;
- for nvfuse, torch's CUDA sync debug mode over two steps: each call that
  synchronizes with the GPU (an item(), a host copy) with where it is;
- for both, torch.profiler's table of host time by op over one step
  (own time: nvfuse's compiled forward's and backward's own time is the
  graphs' Python code and nvfuse's `_C.execute`); ops outside the compiled
  graph (a loss computed in eager) are in both tables, so a stall there
  that only nvfuse's step shows is nvfuse's;
- for both, the single calls with the most own time, each with its input
  shapes, the ops it ran under and the CUDA calls made inside it (which
  call of an op stalled, and on what);
- for both, the caching allocator's device allocations, frees and
  retries over one step (each a cudaMalloc or cudaFree, which can stall
  the host);
- for both, the enqueue and wall time again after the profiling: whether
  a step runs slower once torch.profiler has run in the process (the
  model benchmark times each case after profiling the one before).

    python3 tools/zoo_host_check.py vit:training bert:training

NVFUSE_HOST_CHECK_BACKENDS=nvfuse checks one backend only.

Steps run five times first, as the model benchmark's warm-up."""

import os
import sys
import time
import warnings

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tools.zoo_profile import step_of  # noqa: E402 (also registers the backend)


def enqueue_and_wall_ms(step, steps=10):
    enqueue, wall = [], []
    for _ in range(steps):
        torch.cuda.synchronize()
        start = time.perf_counter()
        step()
        returned = time.perf_counter()
        torch.cuda.synchronize()
        enqueue.append(1e3 * (returned - start))
        wall.append(1e3 * (time.perf_counter() - start))
    return sorted(enqueue)[steps // 2], sorted(wall)[steps // 2]


def synchronizing_calls(step, steps=2):
    """(file, line, message) of each call that synchronized, over `steps`."""
    torch.cuda.set_sync_debug_mode("warn")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(steps):
                step()
    finally:
        torch.cuda.set_sync_debug_mode(0)
    return [
        (w.filename, w.lineno, str(w.message)[:100])
        for w in caught
        if "synchroniz" in str(w.message)
    ]


def profiled_step(step):
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        step()
        torch.cuda.synchronize()
    return prof


def print_host_ops(step, top=25):
    # A step profiled first and dropped. The op of the first CUDA launch
    # on each thread (the forward's on the main thread, the backward's on
    # autograd's device thread) took 0.5 to 2.8 ms of own time in the
    # executor profiled first in each process (nvfuse) and not in the
    # second: perhaps the profiler's set-up, paid in a process's first
    # profiled step, not the executor's.
    profiled_step(step)
    prof = profiled_step(step)
    averages = sorted(prof.key_averages(), key=lambda a: -a.self_cpu_time_total)
    total = sum(a.self_cpu_time_total for a in averages) / 1e3
    print(f"  host time by op, own time (profiled step: {total:.2f} ms):")
    for a in averages[:top]:
        print(f"    {a.self_cpu_time_total / 1e3:7.3f} ms {a.count:5d}x {a.key[:70]}")
    print_slowest_calls(prof)


def print_slowest_calls(prof, top=8):
    """The single calls with the most own time: their shapes and callers."""
    ops = [e for e in prof.events() if e.name.startswith("aten::")]
    print("  slowest single calls, own time:")
    for event in sorted(ops, key=lambda e: -e.self_cpu_time_total)[:top]:
        callers, parent = [], event.cpu_parent
        while parent is not None and len(callers) < 5:
            callers.append(parent.name[:40])
            parent = parent.cpu_parent
        shapes = str(event.input_shapes)[:60]
        print(f"    {event.self_cpu_time_total / 1e3:7.3f} ms {event.name} {shapes}")
        print(f"        under {' <- '.join(callers) or '(top level)'}")
        inside = [
            e
            for e in prof.events()
            if e.name.startswith("cu")
            and e.thread == event.thread
            and event.time_range.start <= e.time_range.start <= event.time_range.end
        ]
        if inside:
            calls = ", ".join(f"{e.name} {e.cpu_time_total:.0f} us" for e in inside[:6])
            print(f"        CUDA calls inside: {calls}")


def print_allocator_counts(step):
    counters = ("num_device_alloc", "num_device_free", "num_alloc_retries", "num_sync_all_streams")
    torch.cuda.synchronize()
    before = torch.cuda.memory_stats()
    step()
    torch.cuda.synchronize()
    after = torch.cuda.memory_stats()
    counts = ", ".join(f"{c} {after.get(c, 0) - before.get(c, 0)}" for c in counters)
    print(f"  allocator over one step: {counts}")


def main():
    for spec in sys.argv[1:]:
        name, kind = spec.split(":")
        for backend in os.environ.get("NVFUSE_HOST_CHECK_BACKENDS", "nvfuse,inductor").split(","):
            step = step_of(name, kind == "training", backend)
            for _ in range(5):
                step()
            enqueue, wall = enqueue_and_wall_ms(step)
            print(f"{name} {kind} ({backend}): enqueue {enqueue:.2f} ms, wall {wall:.2f} ms")
            if backend == "nvfuse":
                syncs = synchronizing_calls(step)
                print(f"  {len(syncs)} synchronizing calls in two steps")
                for filename, line, message in syncs[:8]:
                    print(f"    {filename}:{line}: {message}")
            print_allocator_counts(step)
            print_host_ops(step)
            # The model benchmark profiles each case after timing it, so a
            # case is timed after the one before it was profiled.
            enqueue, wall = enqueue_and_wall_ms(step)
            print(f"  after profiling: enqueue {enqueue:.2f} ms, wall {wall:.2f} ms")


if __name__ == "__main__":
    main()
