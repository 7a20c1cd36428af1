"""Tensor-parallel blocks on every GPU of the host, nvfuse against torch
with DTensor tensor parallelism, in one run (launch with torchrun):

    torchrun --nproc-per-node=4 benchmarks/multidevice/tp_blocks.py [--profile]

--profile also prints, on rank 0, the CUDA kernels of 10 calls of each side
(torch.profiler), to see where they differ.

The blocks (workloads/tp_definitions.py): the MLP forward; an MLP training step
(forward saving the pre-activation, then the backward definition; DTensor
runs the module forward and autograd's backward); the attention block
forward, and its training step the same way. Both sides hold the same local weight shards; times are the median
of CUDA-event timings in steady state (back-to-back calls, each waiting for
its collectives as a consumer would), the slowest rank's, best of two
alternating measurements; and the host time per call. Rank 0 prints one line
per case: block, shape, dtype, nvfuse and DTensor ms, the speed-up, the
largest difference of the results, and host microseconds per call.
"""

import os
import sys

import torch
import torch.distributed as dist

import nvfuse.multidevice as md
from nvfuse.multidevice import shard_tensor

# The repository root, for the workloads package (run as a script under torchrun).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
import workloads.tp_definitions as defs  # noqa: E402
from multigpu_timing import host_us, median_ms  # noqa: E402


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
        print(
            prof.key_averages().table(
                sort_by="cuda_time_total", row_limit=10, max_name_column_width=60
            )
        )


def _randn(g, shape, scale, dtype):
    return (torch.randn(shape, generator=g) * scale).to("cuda", dtype)


def _waited(t):
    # DTensor's collectives return AsyncCollectiveTensors: wait, as a
    # consumer would, so that the timing includes them. One never waited on
    # stays registered with c10d's functional collectives, its memory with
    # it, call after call (a training step's forward output, which only
    # autograd reads, grew the registry by one tensor a step until an 80 GB
    # card ran out of memory).
    return t.wait() if hasattr(t, "wait") else t


def mlp_cases(torch_mesh, d):
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        RowwiseParallel,
        parallelize_module,
    )

    for tokens, hidden, dtype in [
        (8192, 4096, torch.bfloat16),
        (8192, 8192, torch.bfloat16),
        (4096, 4096, torch.float32),
    ]:
        g = torch.Generator().manual_seed(0)
        full = [
            _randn(g, (tokens, hidden), 1.0, dtype),
            _randn(g, (4 * hidden, hidden), hidden**-0.5, dtype),
            _randn(g, (4 * hidden,), 0.1, dtype),
            _randn(g, (hidden, 4 * hidden), (4 * hidden) ** -0.5, dtype),
        ]
        module = defs.Mlp(*full[1:]).to("cuda", dtype)
        parallelize_module(module, torch_mesh, {"up": ColwiseParallel(), "down": RowwiseParallel()})
        shape = f"{tokens}x{hidden}"

        fd, handles = defs.mlp_forward(tokens, hidden, dtype, d)
        local = [full[0]] + [shard_tensor(t, h) for t, h in zip(full[1:], handles[1:])]
        yield (
            "MLP fwd",
            shape,
            dtype,
            lambda: fd.execute(local)[0],
            lambda: _waited(module(full[0])),
        )

        # The training step: forward keeping h, backward definition.
        fwd, fwd_handles = defs.mlp_forward(tokens, hidden, dtype, d, save=True)
        bwd, bwd_handles = defs.mlp_backward(tokens, hidden, dtype, d)
        fwd_local = [full[0]] + [shard_tensor(t, h) for t, h in zip(full[1:], fwd_handles[1:])]
        w0_local, w1_local = fwd_local[1], fwd_local[3]
        grad_out = _randn(g, (tokens, hidden), 1.0, dtype)
        x_leaf = full[0].clone().requires_grad_()
        params = [module.up.weight, module.up.bias, module.down.weight]

        def nvfuse_step():
            _, h, act = fwd.execute(fwd_local)
            return bwd.execute([full[0], w0_local, w1_local, h, act, grad_out])[0]

        def dtensor_step():
            with torch.enable_grad():
                out = module(x_leaf)
                _waited(out)  # the forward's all-reduce, as the loss reading it would
                return _waited(torch.autograd.grad(out, [x_leaf] + params, grad_out)[0])

        yield ("MLP fwd+bwd", shape, dtype, nvfuse_step, dtensor_step)

        # Sequence parallelism: tokens sharded in and out; nvfuse's two
        # projections are pipelined loops (all-gather + GEMM, GEMM +
        # reduce-scatter), DTensor's the all-gather and reduce-scatter of
        # its SequenceParallel layouts around the same linears.
        from torch.distributed.tensor import Shard

        sp_module = defs.Mlp(*full[1:]).to("cuda", dtype)
        parallelize_module(
            sp_module,
            torch_mesh,
            {
                "up": ColwiseParallel(input_layouts=Shard(0)),
                "down": RowwiseParallel(output_layouts=Shard(0)),
            },
        )
        sp_fd, sp_handles = defs.mlp_forward(tokens, hidden, dtype, d, sequence_parallel=True)
        sp_local = [shard_tensor(t, h) for t, h in zip(full, sp_handles)]
        yield (
            "SP MLP fwd",
            shape,
            dtype,
            lambda: sp_fd.execute(sp_local)[0],
            lambda: _waited(sp_module(sp_local[0])),
        )


def attention_cases(torch_mesh, d):
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        RowwiseParallel,
        parallelize_module,
    )

    for batch, seq, heads, head_dim in [(4, 2048, 32, 128), (2, 4096, 64, 128)]:
        dtype = torch.bfloat16
        e = heads * head_dim
        g = torch.Generator().manual_seed(1)
        full = [
            _randn(g, (batch, seq, e), 1.0, dtype),
            _randn(g, (3 * e, e), e**-0.5, dtype),
            _randn(g, (e, e), e**-0.5, dtype),
        ]
        module = defs.Attention(full[1], full[2], head_dim).to("cuda", dtype)
        parallelize_module(module, torch_mesh, {"qkv": ColwiseParallel(), "out": RowwiseParallel()})
        fd, handles = defs.attention_forward(batch, seq, heads, head_dim, dtype, d)
        local = [full[0]] + [shard_tensor(t, h) for t, h in zip(full[1:], handles[1:])]
        shape = f"{batch}x{seq} h{heads}"
        yield (
            "attention fwd",
            shape,
            dtype,
            lambda: fd.execute(local)[0],
            lambda: _waited(module(full[0])),
        )

        # The training step: forward saving what autograd saves, backward
        # definition; DTensor runs the module and autograd.
        fwd, _ = defs.attention_forward(batch, seq, heads, head_dim, dtype, d, save=True)
        bwd, _ = defs.attention_backward(batch, seq, heads, head_dim, dtype, d)
        grad_out = _randn(g, (batch, seq, e), 1.0, dtype)
        x_leaf = full[0].clone().requires_grad_()
        params = [module.qkv.weight, module.out.weight]

        def nvfuse_step():
            _, projected, attn, lse, seed, offset = fwd.execute(local)
            return bwd.execute(
                [full[0], local[1], local[2], projected, attn, lse, seed, offset, grad_out]
            )[0]

        def dtensor_step():
            with torch.enable_grad():
                out = module(x_leaf)
                _waited(out)  # the forward's all-reduce, as the loss reading it would
                return _waited(torch.autograd.grad(out, [x_leaf] + params, grad_out)[0])

        yield ("attention fwd+bwd", shape, dtype, nvfuse_step, dtensor_step)


def main():
    from torch.distributed.device_mesh import init_device_mesh

    md.init()
    rank, d = dist.get_rank(), dist.get_world_size()
    torch_mesh = init_device_mesh("cuda", (d,))
    if rank == 0:
        print(f"TP blocks on {d} x {torch.cuda.get_device_name()}")
        print(
            f"{'block':>17} {'shape':>14} {'dtype':>9} {'nvfuse ms':>10} {'DTensor ms':>11} "
            f"{'speed-up':>9} {'max err':>8} {'host us nvfuse/DTensor':>23}"
        )
    for cases in (mlp_cases, attention_cases):
        for block, shape, dtype, run_nvfuse, run_dtensor in cases(torch_mesh, d):
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
                    profile_kernels(f"nvfuse {block} {shape} {dtype}", run_nvfuse)
                    profile_kernels(f"DTensor {block} {shape} {dtype}", run_dtensor)
            if rank == 0:
                print(
                    f"{block:>17} {shape:>14} {str(dtype).split('.')[-1]:>9} {t_nvfuse:>10.3f} "
                    f"{t_dtensor:>11.3f} {t_dtensor / t_nvfuse:>8.2f}x {err:>8.3g} "
                    f"{h_nvfuse:>11.0f} / {h_dtensor:<9.0f}",
                    flush=True,
                )
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
