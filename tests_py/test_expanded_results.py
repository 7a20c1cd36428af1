"""Pointwise results that are expanded broadcasts (stride 0 along an axis
every operand is constant on) run on the reference evaluator, which no
generated kernel replaces yet: there they are computed on one slice and
expanded, as a kernel would leave them, not materialized at full size by
ATen's broadcasting (T5's attention mask, where(causal, bias, min) over
[batch, heads, q, k], made two Float copies of the whole batch)."""

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from nvfuse import DataType, FusionDefinition

BATCH, HEADS, N = 64, 12, 32


def _masked_bias_fusion():
    """where(expand(causal), bias, min) over [BATCH, HEADS, N, N], also cast
    to Float and doubled: T5's decoder mask, plus ops on its result."""
    with FusionDefinition() as fd:
        causal = fd.define_tensor(
            shape=[1, 1, N, N], contiguity=[None, None, True, True], dtype=DataType.Bool
        )
        bias = fd.define_tensor(
            shape=[1, HEADS, N, N], contiguity=[None, True, True, True], dtype=DataType.BFloat16
        )
        masked = fd.ops.where(fd.ops.expand(causal, shape=[BATCH, 1, N, N]), bias, -3.0e38)
        fd.add_output(masked)
        fd.add_output(fd.ops.add(fd.ops.cast(masked, DataType.Float), 1.0))
    return fd


def _inputs(device):
    causal = torch.ones(N, N, dtype=torch.bool, device=device).tril()[None, None]
    bias = torch.randn(1, HEADS, N, N, dtype=torch.bfloat16, device=device)
    return causal, bias


def _expected(causal, bias):
    masked = torch.where(causal.expand(BATCH, 1, N, N), bias, -3.0e38)
    return masked, masked.float() + 1.0


def _check(outputs, causal, bias):
    for out, expected in zip(outputs, _expected(causal, bias)):
        assert out.shape == expected.shape and out.dtype == expected.dtype
        assert out.stride(0) == 0  # expanded, as the definition says
        assert torch.equal(out, expected)


def test_expanded_results_are_computed_on_one_slice():
    fd = _masked_bias_fusion()
    causal, bias = _inputs("cpu")
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        outputs = fd.execute([causal, bias])
    _check(outputs, causal, bias)
    allocated = sum(max(e.self_cpu_memory_usage, 0) for e in prof.key_averages())
    whole_batch_in_bfloat16 = BATCH * HEADS * N * N * 2
    assert allocated < whole_batch_in_bfloat16 / 4


@pytest.mark.gpu
def test_expanded_results_on_cuda_allocate_one_slice():
    fd = _masked_bias_fusion()
    causal, bias = _inputs("cuda")
    fd.execute([causal, bias])  # the first call builds the executor
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    outputs = fd.execute([causal, bias])
    torch.cuda.synchronize()
    allocated = torch.cuda.max_memory_allocated() - before  # before torch's reference
    _check(outputs, causal, bias)
    whole_batch_in_bfloat16 = BATCH * HEADS * N * N * 2
    assert allocated < whole_batch_in_bfloat16 / 4


def test_an_expanded_result_with_an_empty_axis():
    """The broadcast size of an axis is that of any operand not of size 1,
    0 included."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[1, -1, 3], contiguity=[None, True, True], dtype=DataType.Float)
        expanded = fd.ops.expand(x, shape=[5, -1, 3])
        fd.add_output(fd.ops.ne(expanded, 0.0))
    x = torch.ones(1, 0, 3)
    (out,) = fd.execute([x])
    assert out.shape == (5, 0, 3) and out.dtype == torch.bool


def test_a_zero_dim_operand_is_constant_along_expanded_axes():
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[1, 4], contiguity=[None, True], dtype=DataType.Float)
        scale = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float)
        fd.add_output(fd.ops.mul(fd.ops.expand(x, shape=[6, 4]), scale))
    x, scale = torch.randn(1, 4), torch.tensor(3.0)
    (out,) = fd.execute([x, scale])
    assert out.stride(0) == 0
    assert torch.equal(out, x.expand(6, 4) * scale)
