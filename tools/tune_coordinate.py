"""Sweeps the coordinate scheduler's launch shape (block size, bytes of the
widest tensor per thread) over the transformer-op benchmark cases (RoPE, dropout + residual)
on the GPU and prints % of copy bandwidth per setting, each measured three
times (median of 30 CUDA-event timings, L2 flushed before each).

    python3 tools/tune_coordinate.py [case:dtype:size ...]
"""

import os
import sys

sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
)  # the workloads package
from workloads import benchmark_module  # noqa: E402

cases = benchmark_module("test_transformer_ops")
from workloads.gpu_timing import copy_gbps, median_event_time_ms  # noqa: E402
from workloads.l2_flush import make_l2_flush  # noqa: E402

import nvfuse  # noqa: E402

# (block size, bytes per thread); unroll = bytes over a lane group's 16-byte
# vector(s) of the widest tensor, 1..8.
SETTINGS = [(128, 16), (128, 32), (128, 64), (256, 32), (256, 64), (512, 32), (512, 16)]
DEFAULT_TARGETS = [
    "rope:bf16:64MB",
    "rope:fp32:64MB",
    "rope:bf16:256MB",
    "dropout_residual:bf16:64MB",
]


def median_ms(fn, flush):
    return median_event_time_ms(fn, flush, rounds=30, warmup=5)


def main():
    targets = sys.argv[1:] or DEFAULT_TARGETS
    defaults = nvfuse._C.coordinate_tuning()
    flush = make_l2_flush()
    copy = copy_gbps(flush, rounds=30)
    print(f"copy: {copy:.0f} GB/s")
    print(f"{'case':<28}" + "".join(f"{f'{b}x{e}':>14}" for b, e in SETTINGS))
    for target in targets:
        case, dtype, size = target.split(":")
        make_inputs, _, make_fd, _ = cases.CASES[case]
        inputs = make_inputs(cases.SIZES[size], cases.DTYPES[dtype])
        fd = make_fd(cases.DTYPES[dtype])
        out = fd.execute(inputs)[0]
        moved = sum(t.numel() * t.element_size() for t in inputs) + out.numel() * out.element_size()
        cells = []
        for block, per_thread in SETTINGS:
            nvfuse._C.set_coordinate_tuning(block, per_thread, max_unroll=8)
            runs = [
                moved / (median_ms(lambda: fd.execute(inputs), flush) * 1e-3) / 1e9
                for _ in range(3)
            ]
            cells.append("/".join(f"{100 * r / copy:.0f}" for r in runs))
        print(f"{target:<28}" + "".join(f"{c:>14}" for c in cells), flush=True)
    nvfuse._C.set_coordinate_tuning(*defaults)


if __name__ == "__main__":
    main()
