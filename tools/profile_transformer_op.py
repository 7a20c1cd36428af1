"""Runs one case of benchmarks/test_transformer_ops.py a few times through
nvfuse or torch.compile, for profilers:

    ncu --kernel-name regex:'nvfuse|triton' --launch-skip 2 --launch-count 1 \
        python3 tools/profile_transformer_op.py rope bf16 64MB nvfuse
"""

import os
import sys

import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
from gpu_timing import executor_fn  # noqa: E402
from test_transformer_ops import CASES, DTYPES, SIZES  # noqa: E402


def main():
    case, dtype, size, executor = sys.argv[1:5]
    make_inputs, torch_fn, make_fd, _ = CASES[case]
    torch.manual_seed(0)
    inputs = make_inputs(SIZES[size], DTYPES[dtype])
    run = executor_fn(executor, inputs, torch_fn, lambda: make_fd(DTYPES[dtype]))
    for _ in range(4):
        run()
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
