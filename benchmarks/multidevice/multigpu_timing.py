"""Timings of one call on every rank of a torchrun world, for the
multi-GPU benchmarks of this folder (imported by the scripts, which run
from here)."""

import statistics
import time

import torch
import torch.distributed as dist


def median_ms(fn, iters=10, repeats=7, warmup=5):
    """Steady-state time of one call: `iters` back-to-back calls between two
    CUDA events (so host work overlaps the GPU as in a training loop), the
    median over `repeats`, the slowest rank's."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        dist.barrier()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / iters)
    t = torch.tensor([statistics.median(times)], device="cuda")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def host_us(fn, iters=50):
    """Host time of one call (until it returns, GPU work still queued)."""
    torch.cuda.synchronize()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    elapsed = (time.perf_counter() - start) / iters * 1e6
    torch.cuda.synchronize()
    return elapsed
