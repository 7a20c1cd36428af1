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

from nvfuse import DataType, FusionDefinition
from fusion_helpers import kernel_of
from test_carried_exps import _masked_softmax_dropout, _phase, _prologue_inputs
from test_reduction_codegen import ptxas_resources


def _params(kernel):
    return re.search(r"ReductionParams\((.*)\)", kernel).group(1)


def _prologue_kernel(dtype, seq=1024):
    nv = DataType.BFloat16 if dtype == torch.bfloat16 else DataType.Float
    code = _masked_softmax_dropout(nv).cuda_code_for(_prologue_inputs(seq, "cpu", dtype))
    return code, kernel_of(code)


def test_the_bf16_attention_prologue_draws_in_the_phase_that_reads_its_random_values():
    _, kernel = _prologue_kernel(torch.bfloat16)
    params = _params(kernel)
    assert "late_draws" in params
    # 32 elements a thread, four groups of 8 bf16 lanes: a masked row skips
    # half its draws (test_skipped_draws.py); 72 registers (896 threads an SM).
    assert "vector_width=8" in params and "groups_per_thread=4" in params
    assert "min_blocks=28" in params and "block=32," in params
    assert "unit_words" not in _phase(kernel, 0) and "unit_words" not in _phase(kernel, 1)
    phase2 = _phase(kernel, 2)
    # drawn before the math, where a group's draws can change a result
    # (test_skipped_draws.py)
    assert "Draws only where they choose between unequal values" in phase2
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


def _layer_norm_then_dropout(dtype, dropout_first):
    """Dropout before a layer norm (read in phase 0) or after it (read by
    the last phase), bf16 rows."""
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True, dtype=dtype)
        y = fd.ops.cast(x, DataType.Float)
        if dropout_first:
            y = fd.ops.where(fd.ops.lt(fd.ops.rand_like(y), 0.9), y * (1 / 0.9), 0.0)
        var, mean = fd.ops.var_mean(y, [1], correction=0)
        y = (y - fd.ops.broadcast(mean, [False, True])) * fd.ops.broadcast(
            fd.ops.rsqrt(var + 1e-5), [False, True]
        )
        if not dropout_first:
            y = fd.ops.where(fd.ops.lt(fd.ops.rand_like(y), 0.9), y * (1 / 0.9), 0.0)
        fd.add_output(fd.ops.cast(y, dtype))
    return fd


@pytest.mark.parametrize("width", [1024, 4096, 16384])
@pytest.mark.parametrize("dropout_first", [True, False], ids=["dropout_first", "dropout_last"])
def test_only_random_values_read_after_phase_0_are_drawn_late(dropout_first, width):
    code = _layer_norm_then_dropout(DataType.BFloat16, dropout_first).cuda_code_for(
        [torch.randn(8, width).to(torch.bfloat16)]
    )
    params = _params(kernel_of(code))
    # Late only in blocks of at most 512 threads (16 elements each: 8192).
    late = not dropout_first and width <= 8192
    assert ("late_draws" in params) == late, params
    # Only late-draw rows that carry exps state a register bound.
    assert "min_blocks=" not in params
    # Rows that draw early read their bf16 lanes as 16-bit values (see
    # nvfuse::lane_of: from their words, dropout + layer norm's kernel
    # lost 19 points of bandwidth); late-draw rows cut them from words.
    kernel = kernel_of(code)
    bf16_lanes = re.findall(r"const nvfuse::BFloat16 t\d+ = nvfuse::lane_of(<false>)?\(", kernel)
    assert bf16_lanes and all(words == ("" if late else "<false>") for words in bf16_lanes)
    if late:
        for entry, (registers, stack, spilled) in ptxas_resources(code).items():
            assert stack == 0 and spilled == 0, (entry, registers, stack, spilled, params)


@pytest.mark.parametrize("seq", [7, 1024, 4096])
def test_the_bf16_attention_prologue_states_72_registers_a_thread(seq):
    # a masked row's twice the elements (kMaskedLateDrawRegisterBlocks)
    _, kernel = _prologue_kernel(torch.bfloat16, seq)
    params = _params(kernel)
    block = int(re.search(r"block=(\d+)", params).group(1))
    assert f"min_blocks={896 // block}," in params, params
