"""Tensor-parallel blocks on every GPU of the host, nvfuse against torch
with DTensor tensor parallelism, in one run (launch with torchrun):

    torchrun --nproc-per-node=4 benchmarks/multidevice/tp_blocks.py [--profile]

--profile also prints, on rank 0, the CUDA kernels of 10 calls of each side
(torch.profiler), to see where they differ.

The MLP (seed 003): column-parallel linear (+bias) -> GELU -> row-parallel
linear, whose partial results one Allreduce combines. Both sides hold the
same local weight shards; times are the median of CUDA-event timings of the
forward in steady state (back-to-back calls, each waiting for its Allreduce
as a consumer would), the slowest rank's, best of two alternating
measurements; and the host time per call. Rank 0 prints
one line per case: tokens x hidden, dtype, nvfuse and DTensor ms, and the
speed-up.
"""

import math
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

import nvfuse.multidevice as md
from nvfuse import DataType, FusionDefinition, ParallelType
from nvfuse.multidevice import DeviceMesh, shard_tensor
from nvfuse.pytorch_utils import torch_dtype_to_nvfuse_dtype


def mlp_definition(tokens, hidden, dtype, d):
    mesh = DeviceMesh(torch.arange(d))
    nv_dtype = torch_dtype_to_nvfuse_dtype(dtype)
    with FusionDefinition() as fd:
        x = fd.define_tensor((tokens, hidden), contiguity=True, dtype=nv_dtype)
        w0 = fd.define_tensor((4 * hidden, hidden), contiguity=True, dtype=nv_dtype)
        b0 = fd.define_tensor((4 * hidden,), contiguity=True, dtype=nv_dtype)
        w1 = fd.define_tensor((hidden, 4 * hidden), contiguity=True, dtype=nv_dtype)
        h = fd.ops.cast(fd.ops.linear(x, w0, b0), DataType.Float)
        g = fd.ops.mul(
            fd.ops.mul(h, 0.5), fd.ops.add(fd.ops.erf(fd.ops.mul(h, 1 / math.sqrt(2))), 1.0)
        )
        out = fd.ops.linear(fd.ops.cast(g, nv_dtype), w1)
        fd.add_output(out)
        x.set_device_mesh(mesh)
        for w, axis in ((w0, 0), (w1, 1)):
            w.set_device_mesh(mesh)
            w.outer_split(axis, d)
            w.axis(axis).parallelize(ParallelType.mesh_x)
    return fd, (x, w0, b0, w1), mesh


class Mlp(torch.nn.Module):
    def __init__(self, w0, b0, w1):
        super().__init__()
        self.up = torch.nn.Linear(w0.shape[1], w0.shape[0])
        self.down = torch.nn.Linear(w1.shape[1], w1.shape[0], bias=False)
        with torch.no_grad():
            self.up.weight.copy_(w0)
            self.up.bias.copy_(b0)
            self.down.weight.copy_(w1)

    def forward(self, x):
        return self.down(torch.nn.functional.gelu(self.up(x)))


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


PROFILE = "--profile" in sys.argv


def profile_kernels(title, fn, calls=10):
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    if dist.get_rank() == 0:
        print(f"---- {title}: CUDA kernels of {calls} calls")
        print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=10, max_name_column_width=60))


def main():
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        RowwiseParallel,
        parallelize_module,
    )

    md.init()
    rank, d = dist.get_rank(), dist.get_world_size()
    torch_mesh = init_device_mesh("cuda", (d,))
    cases = [(8192, 4096, torch.bfloat16), (8192, 8192, torch.bfloat16), (4096, 4096, torch.float32)]
    if rank == 0:
        print(f"TP MLP forward on {d} x {torch.cuda.get_device_name()}")
        print(
            f"{'tokens x hidden':>16} {'dtype':>9} {'nvfuse ms':>10} {'DTensor ms':>11} "
            f"{'speed-up':>9} {'max err':>8} {'host us nvfuse/DTensor':>23}"
        )
    for tokens, hidden, dtype in cases:
        g = torch.Generator().manual_seed(0)
        full = [
            (torch.randn(shape, generator=g) * scale).to("cuda", dtype)
            for shape, scale in (
                ((tokens, hidden), 1.0),
                ((4 * hidden, hidden), hidden**-0.5),
                ((4 * hidden,), 0.1),
                ((hidden, 4 * hidden), (4 * hidden) ** -0.5),
            )
        ]
        fd, tensors, mesh = mlp_definition(tokens, hidden, dtype, d)
        local = [full[0]] + [shard_tensor(t, h, mesh) for t, h in zip(full[1:], tensors[1:])]
        module = Mlp(*full[1:]).to("cuda", dtype)
        parallelize_module(module, torch_mesh, {"up": ColwiseParallel(), "down": RowwiseParallel()})
        def run_nvfuse():
            return fd.execute(local)[0]

        def run_dtensor():
            # The Allreduce's result is an AsyncCollectiveTensor: wait for
            # it, as a consumer would, so the timing includes it.
            out = module(full[0])
            return out.wait() if hasattr(out, "wait") else out

        with torch.no_grad():
            err = (run_nvfuse().float() - run_dtensor().float()).abs().max().item()
            # Alternating, best of two, so clock drift favours neither side.
            t_nvfuse, t_dtensor = float("inf"), float("inf")
            for _ in range(2):
                t_nvfuse = min(t_nvfuse, median_ms(run_nvfuse))
                t_dtensor = min(t_dtensor, median_ms(run_dtensor))
            h_nvfuse = host_us(run_nvfuse)
            h_dtensor = host_us(run_dtensor)
            if PROFILE:
                profile_kernels(f"nvfuse {tokens}x{hidden} {dtype}", run_nvfuse)
                profile_kernels(f"DTensor {tokens}x{hidden} {dtype}", run_dtensor)
        if rank == 0:
            print(
                f"{tokens:>7} x {hidden:<6} {str(dtype).split('.')[-1]:>9} {t_nvfuse:>10.3f} "
                f"{t_dtensor:>11.3f} {t_dtensor / t_nvfuse:>8.2f}x {err:>8.3g} "
                f"{h_nvfuse:>11.0f} / {h_dtensor:<9.0f}"
            )
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
