"""A fingerprint of the kernels nvfuse generates, without a GPU.

Generates the CUDA source (FusionDefinition.cuda_code_for, sm_90 defaults)
of every normalization case and loss/attention block over a grid of shapes,
dtypes and reduction tunings, and of the pointwise and transformer-op
benchmarks' fusions (pointwise, transpose, coordinate, scan and scatter
kernels) over their sizes, and prints one line per combination: its key
and a hash of the source. A refactoring of the schedulers or the code
generators that must not change what runs is checked by comparing two
snapshots:

    python3 tools/kernel_snapshot.py > before.txt
    ... change the code, rebuild ...
    python3 tools/kernel_snapshot.py --compare before.txt

--compare prints the keys whose kernels changed and exits 1 if any did.
Inputs are uninitialized CPU tensors (only sizes, strides and dtypes reach
the schedulers), so the large shapes cost no memory traffic.
"""

import argparse
import hashlib
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
)  # the workloads package

from workloads import benchmark_module  # noqa: E402
from workloads.cpu_stand_ins import OnCpu, fusion_of_body, norm_case_inputs  # noqa: E402
import workloads.loss_and_norm_definitions as blocks  # noqa: E402
from workloads.norm_definitions import CASES, VARIANTS, define_case, reduction_tuning  # noqa: E402

SHAPES = [
    (4, 7),
    (2048, 1600),
    (16384, 1600),
    (2048, 4096),
    (8192, 4096),
    (32768, 8192),
    (4096, 65536),
    (512, 262144),
    (8, 1 << 20),
]
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
TUNINGS = {
    "default": {},
    "staging2": {"staging": 2},
    "pipelining2": {"pipelining": 2},
    "no_clusters": {"max_cluster": 1, "streamed_cluster": 1},
    "elements8": {"elements_per_thread": 8},
    "no_carry": {"carry_exps": 0},
}
BLOCK_ROWS = [512, 2048, 8192, 32768]
BLOCKS = ("cross_entropy_fwd", "cross_entropy_bwd", "dropout_ln", "attention_prologue")


def block_inputs(name, rows, dtype):
    with OnCpu():
        return getattr(blocks, name + "_inputs")(rows, dtype)


def fingerprint(fd, inputs):
    try:
        code = fd.cuda_code_for(inputs)
    except Exception as error:  # a case a shape cannot take is part of the snapshot
        return "error-" + type(error).__name__
    return hashlib.sha1(code.encode()).hexdigest()[:16]


def other_kernels():
    """The pointwise and transformer-op benchmarks' fusions."""
    lines = []
    pointwise = benchmark_module("test_pointwise")
    ops = benchmark_module("test_transformer_ops")
    for dtype_name, dtype in DTYPES.items():
        for name, (make_inputs, body, _) in pointwise.CASES.items():
            for size in ("1MB", "64MB", "1GB"):
                with OnCpu():
                    inputs = make_inputs(pointwise.SIZES[size] // dtype.itemsize, dtype)
                fd = fusion_of_body(body, inputs, dtype)
                lines.append(f"pointwise {dtype_name} {name} {size} {fingerprint(fd, inputs)}")
        for name, (make_inputs, _, make_fd, _) in ops.CASES.items():
            for size in ("16MB", "256MB"):
                with OnCpu():
                    inputs = make_inputs(ops.SIZES[size], dtype)
                lines.append(
                    f"ops {dtype_name} {name} {size} {fingerprint(make_fd(dtype), inputs)}"
                )
    return lines


def snapshot():
    lines = other_kernels()
    for tuning_name, changes in TUNINGS.items():
        with reduction_tuning(**changes):
            for dtype_name, dtype in DTYPES.items():
                for name in sorted(CASES) + sorted(VARIANTS):
                    fd = define_case(name, dtype)
                    for rows, width in SHAPES:
                        key = f"{tuning_name} {dtype_name} {name} {rows}x{width}"
                        lines.append(
                            f"{key} {fingerprint(fd, norm_case_inputs(name, rows, width, dtype))}"
                        )
                for name in BLOCKS:
                    fd = getattr(blocks, name + "_fd")(dtype)
                    for rows in BLOCK_ROWS:
                        key = f"{tuning_name} {dtype_name} {name} {rows}"
                        lines.append(f"{key} {fingerprint(fd, block_inputs(name, rows, dtype))}")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare", help="a snapshot to compare against")
    args = parser.parse_args()
    lines = snapshot()
    if not args.compare:
        print("\n".join(lines))
        return 0
    with open(args.compare) as f:
        before = dict(line.rsplit(" ", 1) for line in f.read().splitlines() if line)
    now = dict(line.rsplit(" ", 1) for line in lines)
    changed = [key for key in now if before.get(key) != now[key]]
    for key in changed:
        print("changed:", key)
    print(f"{len(now) - len(changed)} of {len(now)} kernels unchanged")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
