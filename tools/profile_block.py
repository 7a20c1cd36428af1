"""Runs one loss/norm block of benchmarks/test_loss_and_norm_blocks.py a few
times through nvfuse and prints its kernels' launches and resources, for
profilers:

    NVFUSE_DUMP=launch python3 tools/profile_block.py dropout_ln bf16 32768
    ncu --kernel-name regex:nvfuse --launch-skip 4 --launch-count 1 \\
        python3 tools/profile_block.py attention_prologue bf16 8192

Arguments: the case, fp32|bf16, rows (of the benchmarks' 8192-wide rows),
and optionally the reduction tuning's elements per thread (a sweep point).
"""

import os
import sys

import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
)  # the workloads package
import workloads.loss_and_norm_definitions as blocks  # noqa: E402
from workloads.gpu_timing import median_event_time_ms  # noqa: E402

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def main():
    case, dtype, rows = sys.argv[1], DTYPES[sys.argv[2]], int(sys.argv[3])
    if len(sys.argv) > 4:
        from nvfuse import _C

        _C.set_reduction_tuning(int(sys.argv[4]))
    torch.manual_seed(0)
    inputs = getattr(blocks, case + "_inputs")(rows, dtype)
    fd = getattr(blocks, case + "_fd")(dtype)
    for _ in range(4):
        fd.execute(inputs)
    torch.cuda.synchronize()
    print(case, sys.argv[2], "rows", rows, "segments", fd.segment_summary())
    print("last kernel", fd.last_kernel_info())
    ms = median_event_time_ms(lambda: fd.execute(inputs), lambda: None)
    moved = sum(t.numel() * t.element_size() for t in inputs)
    moved += sum(t.numel() * t.element_size() for t in fd.execute(inputs))
    print(f"{ms * 1e3:.1f} us, {moved / ms / 1e6:.0f} GB/s (inputs + outputs once)")


if __name__ == "__main__":
    main()
