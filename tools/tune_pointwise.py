"""Sweeps the pointwise scheduler's launch shape (block size, max unroll)
over benchmark cases on the GPU and prints % of copy bandwidth per setting,
each measured three times (median of 30 CUDA-event timings, L2 flushed
before each). With --tiles, sweeps the transpose kernel's tile instead.

    python3 tools/tune_pointwise.py [--tiles] [case:dtype:size ...]
"""

import os
import sys

sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
)  # the workloads package
from workloads import benchmark_module  # noqa: E402

cases = benchmark_module("test_pointwise")
from workloads.gpu_timing import copy_gbps, median_event_time_ms  # noqa: E402
from workloads.l2_flush import make_l2_flush  # noqa: E402

import nvfuse  # noqa: E402

SETTINGS = [(128, 4), (256, 4), (256, 8), (512, 4), (128, 8), (256, 2), (512, 2)]
TILES = [(32, 1), (64, 1), (32, 2), (64, 2), (64, 4)]  # (tile, vector)
DEFAULT_TARGETS = [
    "channels_last:bf16:1GB",
    "add_mul_relu:bf16:64MB",
    "bias_gelu:bf16:64MB",
    "row_broadcast_add:bf16:64MB",
    "chain10:fp32:1GB",
    "add_mul_relu:fp32:1GB",
]


def median_ms(fn, flush):
    return median_event_time_ms(fn, flush, rounds=30, warmup=5)


def _tuning(setting, sweep_tiles):
    """set_pointwise_tuning's arguments for one sweep setting."""
    if sweep_tiles:
        tile, vector = setting
        return dict(
            block_size=256,
            max_unroll=4,
            elements_per_thread=16,
            transpose_tile=tile,
            transpose_vector=vector,
        )
    block, unroll = setting
    return dict(block_size=block, max_unroll=unroll, elements_per_thread=1024)


def main():
    args = sys.argv[1:]
    sweep_tiles = "--tiles" in args
    targets = [a for a in args if a != "--tiles"] or DEFAULT_TARGETS
    settings = TILES if sweep_tiles else SETTINGS
    flush = make_l2_flush()
    copy = copy_gbps(flush, rounds=30)
    print(f"copy: {copy:.0f} GB/s")
    labels = [f"tile {s[0]} vec {s[1]}" if sweep_tiles else f"{s[0]}x{s[1]}" for s in settings]
    print(f"{'case':<32}" + "".join(f"{label:>16}" for label in labels))
    for target in targets:
        case, dtype, size = target.split(":")
        make_inputs, body, torch_fn = cases.CASES[case]
        torch_dtype = cases.DTYPES[dtype]
        inputs = make_inputs(cases.SIZES[size] // torch_dtype.itemsize, torch_dtype)
        layout_like = torch_fn(*inputs)
        moved = sum(t.numel() * t.element_size() for t in inputs) * 2 - sum(
            t.numel() * t.element_size() for t in inputs[1:]
        )
        cells = []
        for setting in settings:
            nvfuse._C.set_pointwise_tuning(**_tuning(setting, sweep_tiles))
            fn = cases._nvfuse_callable(body, inputs, torch_dtype, layout_like)
            runs = [moved / (median_ms(fn, flush) * 1e-3) / 1e9 for _ in range(3)]
            cells.append("/".join(f"{100 * r / copy:.0f}" for r in runs))
        print(f"{target:<32}" + "".join(f"{c:>16}" for c in cells), flush=True)
    nvfuse._C.set_pointwise_tuning(256, 4)  # the defaults


if __name__ == "__main__":
    main()
