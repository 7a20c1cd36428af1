"""Runs one normalization case a few times through nvfuse, for profilers:

    ncu --kernel-name regex:nvfuse --launch-skip 2 --launch-count 1 \
        python3 tools/profile_case.py layer_norm_fwd bf16 32768x8192

NVFUSE_REDUCTION_TUNING=E/P/C/L/K/X/S (as tools/tune_reduction.py's
settings) profiles that tuning instead of the default.
"""

import os
import sys

import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
)  # the workloads package
from workloads.norm_definitions import CASES, define_case  # noqa: E402

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def main():
    case, dtype, shape = sys.argv[1:4]
    rows, width = (int(v) for v in shape.split("x"))
    torch.manual_seed(0)
    inputs = CASES[case].make_inputs(rows, width, DTYPES[dtype], "cuda")
    tuning = os.environ.get("NVFUSE_REDUCTION_TUNING")
    if tuning:
        import nvfuse

        nvfuse._C.set_reduction_tuning(*(int(v) for v in tuning.split("/")))
    fd = define_case(case, DTYPES[dtype])
    for _ in range(4):
        fd.execute(inputs)
    torch.cuda.synchronize()
    print(fd.last_kernel_info())


if __name__ == "__main__":
    main()
