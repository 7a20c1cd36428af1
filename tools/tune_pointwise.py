"""Sweeps the pointwise scheduler's launch shape (block size, max unroll)
over benchmark cases on the GPU and prints GB/s per setting, each measured
three times (median of 30 CUDA-event timings, L2 flushed before each).

    python3 tools/tune_pointwise.py [case:dtype:size ...]
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
import test_pointwise as cases  # noqa: E402
from gpu_timing import copy_gbps, make_l2_flush, median_event_time_ms  # noqa: E402

import nvfuse  # noqa: E402

SETTINGS = [(128, 4), (256, 4), (256, 8), (512, 4), (128, 8), (256, 2), (512, 2)]
DEFAULT_TARGETS = ["channels_last:bf16:1GB", "add_mul_relu:bf16:64MB",
                   "bias_gelu:bf16:64MB", "row_broadcast_add:bf16:64MB",
                   "chain10:fp32:1GB", "add_mul_relu:fp32:1GB"]


def median_ms(fn, flush):
    return median_event_time_ms(fn, flush, rounds=30, warmup=5)


def main():
    targets = sys.argv[1:] or DEFAULT_TARGETS
    flush = make_l2_flush()
    copy = copy_gbps(flush, rounds=30)
    print(f"copy: {copy:.0f} GB/s")
    print(f"{'case':<32}" + "".join(f"{f'{b}x{u}':>16}" for b, u in SETTINGS))
    for target in targets:
        case, dtype, size = target.split(":")
        make_inputs, body, _ = cases.CASES[case]
        torch_dtype = cases.DTYPES[dtype]
        inputs = make_inputs(cases.SIZES[size] // torch_dtype.itemsize, torch_dtype)
        moved = sum(t.numel() * t.element_size() for t in inputs) * 2 - sum(
            t.numel() * t.element_size() for t in inputs[1:])
        cells = []
        for block, unroll in SETTINGS:
            nvfuse._C.set_pointwise_tuning(block, unroll, elements_per_thread=1024)
            fn = cases._nvfuse_callable(body, inputs, torch_dtype)
            runs = [moved / (median_ms(fn, flush) * 1e-3) / 1e9 for _ in range(3)]
            cells.append("/".join(f"{100 * r / copy:.0f}" for r in runs))
        print(f"{target:<32}" + "".join(f"{c:>16}" for c in cells), flush=True)
    nvfuse._C.set_pointwise_tuning(256, 4)  # the defaults


if __name__ == "__main__":
    main()
