"""All-gather + GEMM and GEMM + reduce-scatter on every GPU of the host
(launch with torchrun; one GPU runs a one-device mesh):

    torchrun --nproc-per-node=4 benchmarks/multidevice/overlap.py [--quick] [--timeline]

Per shape M x K x N (bf16), in one run:
- all-gather + GEMM: A [M, K] sharded on M, B [K, N] replicated, the
  product gathered on every device. nvfuse's pipelined loop (chunks chosen
  per call, and each forced count of CHUNKS), against NCCL's all-gather
  then one GEMM in sequence, and torch's
  torch.ops.symm_mem.fused_all_gather_matmul;
- GEMM + reduce-scatter: A [M, K] and B [K, N] sharded on K, the product
  reduce-scattered on M: nvfuse's loop against a GEMM then NCCL's
  reduce-scatter, and torch.ops.symm_mem.fused_matmul_reduce_scatter.
The communication alone and the GEMM alone give the ideal, max(both). Times
are the slowest rank's median of CUDA-event timings of back-to-back calls.
Rank 0 prints one line per case: ms, ratio to the ideal, and the
largest difference from the sequential result. --timeline also profiles 3
calls of nvfuse's loop (chunks chosen) and of the sequential pair per shape
and prints how long the communication kernels and the GEMM kernels ran at
the same time (torch.profiler's CUDA kernel timeline, rank 0).
"""

import argparse
import functools
import os
import sys

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import nvfuse.multidevice as md  # noqa: E402
from nvfuse import DataType, FusionDefinition, ParallelType  # noqa: E402
from nvfuse.multidevice import DeviceMesh  # noqa: E402

import multigpu_timing  # noqa: E402

SHAPES = {
    1: [(8192, 8192, 8192)],
    4: [(8192, 8192, 8192), (4096, 12288, 6144), (16384, 8192, 28672)],
}
CHUNKS = [2, 4, 8]


# Fewer warm-up calls and host-timed calls than tp_blocks.py: every case
# here is one GEMM of milliseconds.
median_ms = functools.partial(multigpu_timing.median_ms, warmup=3)
host_us = functools.partial(multigpu_timing.host_us, iters=20)


def shard(t, axis, mesh):
    t.set_device_mesh(mesh)
    t.outer_split(axis, mesh.size)
    t.axis(axis).parallelize(ParallelType.mesh_x)


def stream_split(t, axis, chunks):
    t.outer_split(axis, chunks)
    t.axis(axis).parallelize(ParallelType.stream)


def allgather_gemm_definition(m, k, n, mesh, chunks):
    with FusionDefinition() as fd:
        a = fd.define_tensor((m, k), contiguity=True, dtype=DataType.BFloat16)
        b = fd.define_tensor((k, n), contiguity=True, dtype=DataType.BFloat16)
        c = fd.ops.matmul(a, b)
        fd.add_output(c)
        shard(a, 0, mesh)
        b.set_device_mesh(mesh)
        c.set_device_mesh(mesh)
        if chunks is not None:
            stream_split(c, 0, chunks)
    return fd


def gemm_reduce_scatter_definition(m, k, n, mesh, chunks):
    with FusionDefinition() as fd:
        a = fd.define_tensor((m, k), contiguity=True, dtype=DataType.BFloat16)
        b = fd.define_tensor((k, n), contiguity=True, dtype=DataType.BFloat16)
        c = fd.ops.matmul(a, b)
        fd.add_output(c)
        shard(a, 1, mesh)
        shard(b, 0, mesh)
        shard(c, 0, mesh)
        if chunks is not None:
            stream_split(c, 1, chunks)
    return fd


def symm_mem_ops(group_name):
    """torch's fused ops, or None where this torch or machine lacks them."""
    try:
        import torch.distributed._symmetric_memory as symm_mem

        if hasattr(symm_mem, "enable_symm_mem_for_group"):
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                symm_mem.enable_symm_mem_for_group(group_name)
        return torch.ops.symm_mem
    except Exception as e:  # noqa: BLE001 - reported, the rest still runs
        if dist.get_rank() == 0:
            print(f"torch fused ops unavailable: {type(e).__name__}: {e}")
        return None


def _union(intervals):
    merged = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


def _length(intervals):
    return sum(end - start for start, end in intervals)


def _intersection(a, b):
    both, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        start, end = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if start < end:
            both.append([start, end])
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return both


def timeline(kind, shape, name, fn, calls=3):
    """Kernel intervals of `calls` calls: communication (NCCL, or a copy
    on one device) against the rest, and their overlap."""
    import json
    import tempfile

    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    dist.barrier()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    if dist.get_rank() != 0:
        return
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        prof.export_chrome_trace(f.name)
        events = json.load(open(f.name))["traceEvents"]
    kernels = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy") and "dur" in e]
    comm = _union(
        [e["ts"], e["ts"] + e["dur"]]
        for e in kernels
        if "nccl" in e["name"].lower() or e.get("cat") == "gpu_memcpy"
    )
    compute = _union(
        [e["ts"], e["ts"] + e["dur"]]
        for e in kernels
        if "nccl" not in e["name"].lower() and e.get("cat") != "gpu_memcpy"
    )
    streams = sorted({e.get("args", {}).get("stream") for e in kernels})
    span = (max(e["ts"] + e["dur"] for e in kernels) - min(e["ts"] for e in kernels)) / 1e3
    both = _length(_intersection(comm, compute)) / 1e3
    comm_ms, compute_ms = _length(comm) / 1e3, _length(compute) / 1e3
    hidden = both / comm_ms if comm_ms else 0.0
    print(
        f"  timeline {kind} {shape} {name}: {calls} calls span {span:.3f} ms; communication "
        f"{comm_ms:.3f} ms, GEMMs {compute_ms:.3f} ms, both at once {both:.3f} ms "
        f"({hidden:.0%} of the communication hidden); streams {streams}",
        flush=True,
    )


def report(kind, shape, name, ms, ideal, diff=None, host=None):
    if dist.get_rank() != 0:
        return
    ratio = f"{ms / ideal:5.2f}x ideal" if ideal else ""
    extra = f"  max|diff| {diff:.3g}" if diff is not None else ""
    extra += f"  host {host:.0f} us/call" if host is not None else ""
    print(f"{kind:10s} {shape:18s} {name:28s} {ms:8.3f} ms  {ratio}{extra}", flush=True)


def try_time(fn):
    try:
        return median_ms(fn)
    except Exception as e:  # noqa: BLE001 - one failing side is reported, not fatal
        if dist.get_rank() == 0:
            print(f"    failed: {type(e).__name__}: {str(e)[:200]}")
        return None


def nvfuse_cases(kind, shape, definition, inputs, reference, ideal, chunk_counts, timelines):
    """nvfuse's NCCL loop with each chunk count (None: chosen per call),
    then, on several devices, the copy-engine loop (one device per step),
    then the default "auto" backend's choice; each checked against
    `reference` and reported with its host time."""

    def run(fd, name, timer):
        (out,) = fd.execute(inputs)
        diff = (out.float() - reference.float()).abs().max().item()
        ms = timer(lambda: fd.execute(inputs))
        if ms is not None:
            report(kind, shape, name, ms, ideal, diff, host_us(lambda: fd.execute(inputs)))

    md.set_overlap_backend("nccl")
    try:
        for chunks in chunk_counts:
            fd = definition(chunks)
            run(fd, f"nvfuse, {chunks} chunks" if chunks else "nvfuse, chunks chosen", median_ms)
            if timelines and chunks is None:
                timeline(kind, shape, "nvfuse", lambda: fd.execute(inputs))
        if dist.get_world_size() > 1:
            fd = definition(None)
            md.set_overlap_backend("symm_mem")
            run(fd, "nvfuse, copy engine", try_time)
            if timelines:
                timeline(kind, shape, "nvfuse copy engine", lambda: fd.execute(inputs))
    finally:
        md.set_overlap_backend("auto")
    run(definition(None), "nvfuse, auto (default)", try_time)


def allgather_gemm_cases(m, k, n, d, mesh, ops, chunk_counts, profile_timeline):
    rank = dist.get_rank()
    g = torch.Generator().manual_seed(0)
    a_full = torch.randn(m, k, generator=g).to("cuda", torch.bfloat16)
    b = (torch.randn(k, n, generator=g) * k**-0.5).to("cuda", torch.bfloat16)
    a_local = a_full.chunk(d, 0)[rank].contiguous()
    gathered = torch.empty(m, k, device="cuda", dtype=torch.bfloat16)
    shape = f"{m}x{k}x{n}"

    def sequential():
        dist.all_gather_into_tensor(gathered, a_local)
        return gathered @ b

    reference = sequential()
    comm_ms = median_ms(lambda: dist.all_gather_into_tensor(gathered, a_local))
    gemm_ms = median_ms(lambda: gathered @ b)
    ideal = max(comm_ms, gemm_ms)
    report("AG+GEMM", shape, "all-gather alone", comm_ms, None)
    report("AG+GEMM", shape, "GEMM alone", gemm_ms, None)
    report("AG+GEMM", shape, "sequential (NCCL, cuBLAS)", median_ms(sequential), ideal)
    if ops is not None:
        group = dist.group.WORLD.group_name

        def fused():
            return ops.fused_all_gather_matmul(a_local, [b], gather_dim=0, group_name=group)[1][0]

        ms = try_time(fused)
        if ms is not None:
            report("AG+GEMM", shape, "torch fused (symm_mem)", ms, ideal)
    nvfuse_cases(
        "AG+GEMM",
        shape,
        lambda chunks: allgather_gemm_definition(m, k, n, mesh, chunks),
        [a_local, b],
        reference,
        ideal,
        chunk_counts,
        profile_timeline,
    )
    if profile_timeline:
        timeline("AG+GEMM", shape, "sequential", sequential)


def gemm_reduce_scatter_cases(m, k, n, d, mesh, ops, chunk_counts, profile_timeline):
    rank = dist.get_rank()
    g = torch.Generator().manual_seed(1)
    a_full = torch.randn(m, k, generator=g).to("cuda", torch.bfloat16)
    b_full = (torch.randn(k, n, generator=g) * k**-0.5).to("cuda", torch.bfloat16)
    a_local = a_full.chunk(d, 1)[rank].contiguous()
    b_local = b_full.chunk(d, 0)[rank].contiguous()
    partial = a_local @ b_local
    out = torch.empty(m // d, n, device="cuda", dtype=torch.bfloat16)
    shape = f"{m}x{k}x{n}"

    def sequential():
        p = a_local @ b_local
        dist.reduce_scatter_tensor(out, p)
        return out

    reference = sequential().clone()
    comm_ms = median_ms(lambda: dist.reduce_scatter_tensor(out, partial))
    gemm_ms = median_ms(lambda: a_local @ b_local)
    ideal = max(comm_ms, gemm_ms)
    report("GEMM+RS", shape, "reduce-scatter alone", comm_ms, None)
    report("GEMM+RS", shape, "GEMM alone", gemm_ms, None)
    report("GEMM+RS", shape, "sequential (cuBLAS, NCCL)", median_ms(sequential), ideal)
    if ops is not None:
        group = dist.group.WORLD.group_name

        def fused():
            return ops.fused_matmul_reduce_scatter(
                a_local, b_local, "sum", scatter_dim=0, group_name=group
            )

        ms = try_time(fused)
        if ms is not None:
            report("GEMM+RS", shape, "torch fused (symm_mem)", ms, ideal)
    nvfuse_cases(
        "GEMM+RS",
        shape,
        lambda chunks: gemm_reduce_scatter_definition(m, k, n, mesh, chunks),
        [a_local, b_local],
        reference,
        ideal,
        chunk_counts,
        profile_timeline,
    )
    if profile_timeline:
        timeline("GEMM+RS", shape, "sequential", sequential)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="the first shape, chosen chunks only")
    parser.add_argument("--timeline", action="store_true", help="kernel overlap per shape")
    args = parser.parse_args()
    md.init()
    d = dist.get_world_size()
    mesh = DeviceMesh(torch.arange(d))
    ops = symm_mem_ops(dist.group.WORLD.group_name)
    shapes = SHAPES.get(d, SHAPES[4])  # 2 and 4 devices: the three shapes
    chunk_counts = [None] if args.quick else [None] + CHUNKS
    if args.quick:
        shapes = shapes[:1]
    if dist.get_rank() == 0:
        print(f"==== {d} x {torch.cuda.get_device_name()}, torch {torch.__version__}")
    for m, k, n in shapes:
        allgather_gemm_cases(m, k, n, d, mesh, ops, chunk_counts, args.timeline)
        gemm_reduce_scatter_cases(m, k, n, d, mesh, ops, chunk_counts, args.timeline)
    dist.barrier()


if __name__ == "__main__":
    sys.exit(main())
