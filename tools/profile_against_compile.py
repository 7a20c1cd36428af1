"""Runs one case of benchmarks/test_transformer_ops.py or
benchmarks/test_loss_and_norm_blocks.py a few times through nvfuse,
torch.compile or eager, so a profiler can compare their kernels
(tools/ncu_blocks.sh):

    ncu --kernel-name regex:'nvfuse|triton' --launch-skip 2 --launch-count 1 \\
        python3 tools/profile_against_compile.py rope bf16 64MB compile

Arguments: the case, fp32|bf16, the benchmark size (16MB, 64MB, 256MB) and
the executor (nvfuse, compile, eager).
"""

import os
import sys

import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
)  # the workloads package
import workloads.loss_and_norm_definitions as defs  # noqa: E402
from workloads import benchmark_module  # noqa: E402

ops = benchmark_module("test_transformer_ops")
from workloads.gpu_timing import executor_fn  # noqa: E402


def case_parts(case, dtype, size):
    """(inputs, torch function, fd factory) of a benchmark case."""
    torch_dtype = ops.DTYPES[dtype]
    if case in ops.CASES:
        make_inputs, torch_fn, make_fd, _ = ops.CASES[case]
        return make_inputs(ops.SIZES[size], torch_dtype), torch_fn, lambda: make_fd(torch_dtype)
    rows = max(1, ops.SIZES[size] // (defs.WIDTH * torch_dtype.itemsize))
    inputs = getattr(defs, f"{case}_inputs")(rows, torch_dtype)
    return (
        inputs,
        getattr(defs, f"{case}_torch"),
        lambda: getattr(defs, f"{case}_fd")(torch_dtype),
    )


def main():
    case, dtype, size, executor = sys.argv[1:5]
    torch.manual_seed(0)
    inputs, torch_fn, make_fd = case_parts(case, dtype, size)
    run = executor_fn(executor, inputs, torch_fn, make_fd)
    for _ in range(4):
        run()
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
