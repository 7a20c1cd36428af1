"""Issue-bound rows (ReductionParams::late_draws): persistent rows of half
types whose random values a later phase reads draw them in that phase,
before its math, at the full 16 elements per thread; fp32 rows draw them in phase 0 while their loads are in flight. The
attention prologue also carries its masked scores (a select read again) into
phase 1, and tests its mask's bool lanes in their 32-bit words. Kernel text
and NVRTC's ptxas report, no GPU needed; the GPU results are checked in
test_carried_exps.py and test_random_in_reductions.py."""

import re

import pytest
import torch

from nvfuse import DataType
from test_carried_exps import _kernel, _masked_softmax_dropout, _phase, _prologue_inputs
from test_reduction_codegen import ptxas_resources


def _params(kernel):
    return re.search(r"ReductionParams\((.*)\)", kernel).group(1)


def _prologue_kernel(dtype, seq=1024):
    nv = DataType.BFloat16 if dtype == torch.bfloat16 else DataType.Float
    code = _masked_softmax_dropout(nv).cuda_code_for(_prologue_inputs(seq, "cpu", dtype))
    return code, _kernel(code)


def test_the_bf16_attention_prologue_draws_in_the_phase_that_reads_its_random_values():
    _, kernel = _prologue_kernel(torch.bfloat16)
    params = _params(kernel)
    assert "late_draws" in params
    # 16 elements a thread: two groups of 8 bf16 lanes.
    assert "vector_width=8" in params and "groups_per_thread=2" in params
    assert "unit_words" not in _phase(kernel, 0) and "unit_words" not in _phase(kernel, 1)
    phase2 = _phase(kernel, 2)
    assert "this phase reads first" in phase2
    assert phase2.count("nvfuse_philox::unit_words<kVec>(") == 1


def test_the_fp32_attention_prologue_draws_while_its_loads_are_in_flight():
    _, kernel = _prologue_kernel(torch.float32)
    assert "late_draws" not in _params(kernel)
    assert "drawn while its loads are in flight" in _phase(kernel, 0)
    assert "unit_words" not in _phase(kernel, 2)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=str)
def test_the_attention_prologue_carries_its_masked_scores_into_the_exp_phase(dtype):
    _, kernel = _prologue_kernel(dtype)
    phase1 = _phase(kernel, 1)
    # The select's result (t4) is read from its carried registers: the
    # mask and the scores are not read again.
    assert re.search(r"const float t\d+ = carried_t\d+\[k\]\[v\];", phase1)
    assert "lane_of(in_" not in phase1
    assert "lane_of(in_" in _phase(kernel, 0)


def test_bool_lanes_are_read_through_their_words():
    _, kernel = _prologue_kernel(torch.bfloat16)
    assert re.search(r"const bool t\d+ = nvfuse::lane_of\(in_t\d+\[k\], v\);", kernel)


@pytest.mark.parametrize("seq", [7, 1024, 4096])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=str)
def test_the_attention_prologue_kernels_do_not_spill(dtype, seq):
    code, kernel = _prologue_kernel(dtype, seq)
    for entry, (registers, stack, spilled) in ptxas_resources(code).items():
        assert stack == 0 and spilled == 0, (entry, registers, stack, spilled, _params(kernel))
