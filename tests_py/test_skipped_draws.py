"""Draws a group may skip (codegen/skipped_draws.cpp): in the bf16 attention
prologue (causal mask, softmax, dropout) a group of a row whose lanes were
all masked holds exact zeros, which dropout keeps or drops alike, so the
group skips its Philox rounds. The kernel text and its NVRTC compile need
no GPU; on a GPU the results are checked against the CPU reference's draws
for the same (seed, offset)."""

import pytest
import torch

from nvfuse import DataType, FusionDefinition
from fusion_helpers import compiles_cleanly, kernel_of
from test_carried_exps import _masked_softmax_dropout, _phase, _prologue_inputs
from test_reduction_codegen import ptxas_resources

P_DROP = 0.1
SKIP = "Draws only where they choose between unequal values"


def _last_phase(fd, dtype=torch.bfloat16):
    code = fd.cuda_code_for(_prologue_inputs(1024, "cpu", dtype))
    return code, _phase(kernel_of(code), 2)


def test_the_bf16_prologue_draws_only_where_the_draws_choose():
    code, phase = _last_phase(_masked_softmax_dropout(DataType.BFloat16))
    assert SKIP in phase
    # the test: the where's operands, then the Philox rounds under it
    test, rest = phase.split("if (draw) {", 1)
    assert "draw |= nvfuse::differ_in_bits(float(t" in test
    assert "unit_words<kVec>(" not in test and "unit_words<kVec>(" in rest
    assert "] = 0;" in rest.split("} else {", 1)[1]
    compiles_cleanly(code)
    for entry, (registers, stack, spilled) in ptxas_resources(code).items():
        assert stack == 0 and spilled == 0, (entry, registers, stack, spilled)


def test_a_keep_mask_that_is_an_output_is_always_drawn():
    code, _ = _last_phase(_masked_softmax_dropout(DataType.BFloat16, keep_output=True))
    assert SKIP not in code and "unit_words<kVec>(" in code


def test_a_value_made_from_the_draw_is_always_drawn():
    _, phase = _last_phase(_masked_softmax_dropout(DataType.BFloat16, random_in_value=True))
    assert SKIP not in phase


def test_dropout_without_a_masked_fill_is_always_drawn():
    # A layer norm then dropout: no value is a masked fill's exact zero.
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True, dtype=DataType.BFloat16)
        y = fd.ops.cast(x, DataType.Float)
        var, mean = fd.ops.var_mean(y, [1], correction=0)
        normed = (y - fd.ops.broadcast(mean, [False, True])) * fd.ops.broadcast(
            fd.ops.rsqrt(var + 1e-5), [False, True]
        )
        keep = fd.ops.lt(fd.ops.rand_like(normed), 1.0 - P_DROP)
        fd.add_output(fd.ops.cast(fd.ops.where(keep, normed, 0.0), DataType.BFloat16))
    code = fd.cuda_code_for([torch.randn(64, 1024, dtype=torch.bfloat16)])
    assert "late_draws" in code and SKIP not in code


@pytest.mark.gpu
@pytest.mark.parametrize("seq", [7, 64, 1024, 1600])
def test_skipped_draws_keep_what_the_cpu_draws_keep(seq):
    """Same (seed, offset): the GPU kernel, skipping the masked groups'
    draws, keeps and drops exactly the elements the CPU reference does."""
    fd = _masked_softmax_dropout(DataType.BFloat16, seed=5)
    inputs = _prologue_inputs(seq, "cuda", torch.bfloat16)
    (gpu,) = fd.execute(inputs)
    assert SKIP in fd.last_cuda_code()
    (cpu,) = fd.execute([t.cpu() for t in inputs])
    assert torch.equal(gpu.cpu() == 0, cpu == 0)
    torch.testing.assert_close(gpu.cpu().float(), cpu.float(), rtol=1.6e-2, atol=1e-2)
    masked = ~inputs[1].cpu()
    assert (gpu.cpu()[:, masked] == 0).all()
    # about P_DROP of the unmasked elements dropped
    dropped = (gpu.cpu()[:, ~masked] == 0).double().mean().item()
    assert abs(dropped - P_DROP) < (0.05 if seq >= 64 else 0.5)
