"""Host time per call of cached fusions, from Python: each definition runs
on tiny inputs (the GPU finishes each kernel long before the host enqueues
the next), 2000 calls after warm-up, wall-clock per call. Compare with
eager torch on the same inputs. The benchmarks' CUDA-event timings hide
host time behind their L2 flush; this does not.

    python3 tools/host_latency.py
"""

import os
import sys
import time

import torch

sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
)  # the workloads package
import workloads.loss_and_norm_definitions as defs  # noqa: E402
from workloads import benchmark_module  # noqa: E402

ops = benchmark_module("test_transformer_ops")

from nvfuse import FusionDefinition  # noqa: E402


def per_call_us(fn, calls=2000):
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e6


def add_fd():
    with FusionDefinition() as fd:
        a = fd.define_tensor([-1], contiguity=True)
        b = fd.define_tensor([-1], contiguity=True)
        fd.add_output(a + b)
    return fd


def cases():
    bf = torch.bfloat16
    a = torch.randn(1024, device="cuda")
    yield "add (pointwise)", add_fd(), [a, a], lambda x, y: x + y
    q = torch.randn(1, 2, 16, ops.HEAD_DIM, dtype=bf, device="cuda")
    angles = torch.rand(16, ops.HEAD_DIM, device="cuda")
    yield (
        "rope (coordinate)",
        ops._rope_fd(bf),
        [q, angles.cos().to(bf), angles.sin().to(bf)],
        ops._rope_torch,
    )
    x = torch.randn(8, 8192, dtype=bf, device="cuda")
    yield ("dropout_residual (coordinate)", ops._dropout_fd(bf), [x, x.clone()], ops._dropout_torch)
    # (attention_prologue has no tiny size: its smallest input is 24 MB.)
    for case in ["cross_entropy_fwd", "cross_entropy_bwd", "dropout_ln"]:
        inputs = getattr(defs, f"{case}_inputs")(8, bf)
        yield case, getattr(defs, f"{case}_fd")(bf), inputs, getattr(defs, f"{case}_torch")


def main():
    print(f"{'fusion':<32}{'nvfuse us':>10}{'eager us':>10}  segments")
    for name, fd, inputs, torch_fn in cases():
        nv = per_call_us(lambda: fd.execute(inputs))
        eager = per_call_us(lambda: torch_fn(*inputs))
        kinds = [kind for kind, _ in fd.segment_summary()]
        print(f"{name:<32}{nv:>10.1f}{eager:>10.1f}  {kinds}", flush=True)


if __name__ == "__main__":
    main()
