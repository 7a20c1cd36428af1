"""Cold compile time per kernel kind: NVRTC (front end, NVVM and ptxas, for
sm_90) on the CUDA source nvfuse generates for each case, which is what a
new fusion or a new size pays on its first call before the kernel cache
has it (host work before NVRTC takes 0.1-2 ms). A warm call (kernel in the
disk cache, new process) costs about 1 ms and is not timed here.
pytest-benchmark's median and max over the rounds are the figures. Each
round's source gets an empty kernel of its own appended, so that its PTX
differs: on the GPU machine a second compile of the same code, even with a
comment changed, was answered in 15-30 ms by a cache below nvfuse.

    python3 -m pytest benchmarks/test_compile_time.py --benchmark-json=c.json
"""

import re
import time

import pytest
import torch

from nvfuse import _C
from workloads import benchmark_module
from workloads.cpu_stand_ins import OnCpu, fusion_of_body, norm_case_inputs
from workloads.transcendental_chain import chain_fd
from workloads.norm_definitions import define_case

SEGMENT = re.compile(r"^// ==== nvfuse segment: outputs[ 0-9]+ ====$", re.M)
KERNEL_NAME = re.compile(r"void (?:__launch_bounds__\([^)]*\) )?(nvfuse_\w+)\(const Args args\)")
ARCH = 90


def _pointwise(name, dtype):
    module = benchmark_module("test_pointwise")
    make_inputs, body, _ = module.CASES[name]
    with OnCpu():
        inputs = make_inputs((64 << 20) // dtype.itemsize, dtype)
    return fusion_of_body(body, inputs, dtype).cuda_code_for(inputs)


def _norm(name, dtype, rows=8192, width=4096):
    return define_case(name, dtype).cuda_code_for(norm_case_inputs(name, rows, width, dtype))


def _long_chain(steps, dtype):
    from nvfuse.pytorch_utils import torch_dtype_to_nvfuse_dtype

    fd = chain_fd(steps, torch_dtype_to_nvfuse_dtype(dtype))
    return fd.cuda_code_for([torch.empty(16384, 4096, dtype=dtype)])


def _without_budget(make_code):
    """The code generated with PointwiseTuning::heavy_math_budget off."""
    base = _C.pointwise_tuning()
    _C.set_pointwise_tuning(*base[:5], heavy_math_budget=0)
    try:
        return make_code()
    finally:
        _C.set_pointwise_tuning(*base)


def _rope(dtype):
    module = benchmark_module("test_transformer_ops")
    with OnCpu():
        inputs = module._rope_inputs(64 << 20, dtype)
    return module._rope_fd(dtype).cuda_code_for(inputs)


BF16 = torch.bfloat16
CASES = {
    "pointwise add_mul_relu": lambda: _pointwise("add_mul_relu", BF16),
    "pointwise bias_gelu": lambda: _pointwise("bias_gelu", BF16),
    "pointwise chain10": lambda: _pointwise("chain10", BF16),
    "pointwise chain x5": lambda: _long_chain(5, BF16),
    "pointwise chain x5, no budget": lambda: _without_budget(lambda: _long_chain(5, BF16)),
    "transpose transpose_add": lambda: _pointwise("transpose_add", BF16),
    "scan scaled_cumsum": lambda: _pointwise("scaled_cumsum", BF16),
    "coordinate rope": lambda: _rope(BF16),
    "reduction sum_outer": lambda: _norm("sum_outer", BF16),
    "reduction softmax": lambda: _norm("softmax_fwd", BF16),
    "reduction layer_norm": lambda: _norm("layer_norm_fwd", BF16),
    "reduction layer_norm_bwd": lambda: _norm("layer_norm_bwd", BF16),
    "reduction rms_norm_bwd": lambda: _norm("rms_norm_bwd", BF16),
}


def _kernels(code):
    """(name, source) of each segment's kernel."""
    parts = [p for p in SEGMENT.split(code) if p.strip()]
    return [(KERNEL_NAME.search(p).group(1), p) for p in parts]


@pytest.mark.parametrize("case", list(CASES))
def test_cold_compile(benchmark, case):
    kernels = _kernels(CASES[case]())
    assert kernels
    rounds = iter(range(1000))

    def compile_all():
        suffix = f'\nextern "C" __global__ void nvfuse_compile_round_{next(rounds)}_{time.time_ns()}() {{}}\n'
        for name, source in kernels:
            compiled = _C.nvrtc_compile(source + suffix, name, ARCH)
            assert compiled["bytes"] > 0

    benchmark.pedantic(compile_all, rounds=3, warmup_rounds=0)
    benchmark.extra_info["kernels"] = [name for name, _ in kernels]
    benchmark.extra_info["median_ms"] = round(benchmark.stats.stats.median * 1e3, 1)
    benchmark.extra_info["max_ms"] = round(benchmark.stats.stats.max * 1e3, 1)
