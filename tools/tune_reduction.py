"""Sweeps the inner reduction scheduler's launch shape (elements per thread,
longest persistent row, threads of a chunked row, pipelining, largest
cluster) over normalization cases
on the GPU and prints % of copy bandwidth per setting, each measured twice
(median of 20 CUDA-event timings, L2 flushed before each) and the last
kernel's registers per thread, with
torch.compile's number for reference.

    python3 tools/tune_reduction.py [--no-compile] [--settings E/P/C/L/K,...]
                                    [case:dtype:ROWSxWIDTH ...]

--no-compile skips torch.compile (its column shows 0).

--settings replaces the swept settings (each as printed in the header:
elements/persistent/chunked/pipelining/cluster, optionally /carry_exps
(0 or 1, default 1), /staging (0, 1 or 2, default 1), /streamed (the
blocks of a streamed cluster row, 1 to 16, default 16) and /outer_rows (the
fewest rows a thread of an outer split reduction walks, default 8)).

Cases are those of workloads/norm_definitions.py, or of
workloads/loss_and_norm_definitions.py (cross_entropy_fwd, ...: their
width is fixed, so ROWSxWIDTH must give theirs).
"""

import os
import sys

import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
)  # the workloads package
from workloads.gpu_timing import copy_gbps, median_event_time_ms  # noqa: E402
from workloads.l2_flush import make_l2_flush  # noqa: E402
from workloads.norm_definitions import CASES, define_case  # noqa: E402
import workloads.loss_and_norm_definitions as loss_defs  # noqa: E402
from workloads import benchmark_module  # noqa: E402

bench = benchmark_module("test_normalization")

import nvfuse  # noqa: E402

# (elements_per_thread, max_persistent_threads, chunked_threads, pipelining,
#  max_cluster); the first is the default.
SETTINGS = [
    (16, 1024, 1024, 1, 16),
    (16, 512, 1024, 1, 16),
    (16, 1024, 1024, 1, 1),
    (16, 1024, 1024, 1, 8),
    (32, 1024, 1024, 1, 16),
    (16, 1024, 1024, 2, 16),
    (16, 1024, 1024, 0, 16),
]
DEFAULT_TARGETS = [
    "layer_norm_fwd:bf16:32768x8192",
    "var_mean_inner:bf16:32768x8192",
    "bias_residual_layer_norm_fwd:bf16:32768x8192",
    "softmax_fwd:bf16:32768x8192",
    "layer_norm_fwd:fp32:32768x8192",
    "softmax_fwd:fp32:4096x65536",
    "softmax_fwd:bf16:4096x65536",
    "layer_norm_fwd:bf16:4096x65536",
    "layer_norm_bwd:bf16:32768x8192",
    "layer_norm_bwd:fp32:32768x8192",
    "rms_norm_bwd:bf16:32768x8192",
    "layer_norm_bwd:bf16:2048x1600",
    "layer_norm_fwd:bf16:2048x1600",
    "rms_norm_fwd:bf16:32768x8192",
    "sum_inner:bf16:32768x8192",
    "var_mean_inner:fp32:32768x8192",
]
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def main():
    args = sys.argv[1:]
    settings = SETTINGS
    with_compile = args[:1] != ["--no-compile"]
    if not with_compile:
        args = args[1:]
    if args[:1] == ["--settings"]:
        settings = [tuple(int(v) for v in s.split("/")) for s in args[1].split(",")]
        args = args[2:]
    targets = args or DEFAULT_TARGETS
    flush = make_l2_flush()

    def median_ms(fn):
        return median_event_time_ms(fn, flush, rounds=20, warmup=3)

    copy = copy_gbps(flush)
    print(f"copy: {copy:.0f} GB/s")
    header = "".join(f"{'/'.join(map(str, s)):>18}" for s in settings)
    print(f"{'case':<48}{'compile':>9}{header}")
    default = nvfuse._C.reduction_tuning()
    for target in targets:
        case, dtype, shape = target.split(":")
        rows, width = (int(v) for v in shape.split("x"))
        torch.manual_seed(0)
        if case in CASES:
            inputs = CASES[case].make_inputs(rows, width, DTYPES[dtype], "cuda")
            eager = bench.EAGER[case]
            outputs = CASES[case].torch_reference(*inputs)
            make_fd = lambda: define_case(case, DTYPES[dtype])  # noqa: E731
        else:
            assert width == loss_defs.WIDTH, f"{case} rows are {loss_defs.WIDTH} wide"
            inputs = getattr(loss_defs, case + "_inputs")(rows, DTYPES[dtype])
            eager = getattr(loss_defs, case + "_torch")
            outputs = eager(*inputs)
            outputs = list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]
            make_fd = lambda: getattr(loss_defs, case + "_fd")(DTYPES[dtype])  # noqa: E731
        moved = sum(t.numel() * t.element_size() for t in inputs + list(outputs))
        del outputs

        def pct(fn):
            return 100 * moved / (median_ms(fn) * 1e-3) / 1e9 / copy

        compile_pct = 0.0
        if with_compile:
            torch._dynamo.reset()
            compiled = torch.compile(eager, dynamic=False)
            compile_pct = pct(lambda: compiled(*inputs))
        cells = []
        for setting in settings:
            nvfuse._C.set_reduction_tuning(*setting)
            fd = make_fd()
            fn = lambda: fd.execute(inputs)  # noqa: E731
            runs = "/".join(f"{pct(fn):.0f}" for _ in range(2))
            cells.append(f"{runs} r{fd.last_kernel_info()['registers']}")
        print(f"{target:<48}{compile_pct:>9.0f}" + "".join(f"{c:>18}" for c in cells), flush=True)
    nvfuse._C.set_reduction_tuning(*default)


if __name__ == "__main__":
    main()
