"""matmul, linear and grouped_mm (ATen / cuBLAS calls inside a fusion) against torch,
with pointwise prologues and epilogues, and their definition errors."""

import pytest
import torch

from nvfuse import DataType, FusionDefinition
from nvfuse.errors import DefinitionError, DefinitionTypeError, UnsupportedError
from fusion_helpers import DEVICES, make_input, run_fusion


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "a_shape, b_shape",
    [
        ((8, 16), (16, 4)),
        ((16,), (16, 4)),
        ((8, 16), (16,)),
        ((16,), (16,)),
        ((3, 8, 16), (16, 4)),
        ((2, 1, 8, 16), (3, 16, 4)),
    ],
)
def test_matmul_matches_torch(a_shape, b_shape, device):
    a = make_input(a_shape, torch.float32, device=device)
    b = make_input(b_shape, torch.float32, device=device)
    (out,), _ = run_fusion(lambda fd, x, y: fd.ops.matmul(x, y), [a, b])
    torch.testing.assert_close(out, torch.matmul(a, b), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("with_bias", [False, True])
def test_linear_with_a_gelu_epilogue_matches_torch(with_bias, device):
    """The transformer MLP's first half: linear -> bias -> GELU."""
    x = make_input((4, 6, 32), torch.bfloat16, device=device)
    w = make_input((64, 32), torch.bfloat16, device=device) / 8
    b = make_input((64,), torch.bfloat16, device=device)
    inputs = [x, w, b] if with_bias else [x, w]

    def build(fd, t, weight, *bias):
        y = fd.ops.linear(t, weight, bias[0] if bias else None)
        y = fd.ops.cast(y, DataType.Float)
        return fd.ops.cast(y * fd.ops.sigmoid(y * 1.702), DataType.BFloat16)

    (out,), _ = run_fusion(build, inputs)
    y = torch.nn.functional.linear(x, w, b if with_bias else None).float()
    torch.testing.assert_close(
        out.float(), (y * torch.sigmoid(y * 1.702)).bfloat16().float(), rtol=2e-2, atol=2e-2
    )


def test_matmul_of_mismatched_inner_sizes_is_a_definition_error():
    with pytest.raises(DefinitionError, match="contracted sizes"):
        with FusionDefinition() as fd:
            a = fd.define_tensor([4, 5], contiguity=True)
            b = fd.define_tensor([6, 3], contiguity=True)
            fd.ops.matmul(a, b)


def test_matmul_of_integers_is_a_type_error():
    with pytest.raises(DefinitionTypeError, match="must be Double, Float, Half or BFloat16"):
        with FusionDefinition() as fd:
            a = fd.define_tensor([-1, -1], contiguity=True, dtype=DataType.Int)
            fd.ops.matmul(a, a)


def test_linear_with_a_3d_weight_is_a_definition_error():
    with pytest.raises(DefinitionError, match="1-D or 2-D"):
        with FusionDefinition() as fd:
            x = fd.define_tensor([-1, -1], contiguity=True)
            w = fd.define_tensor([-1, -1, -1], contiguity=True)
            fd.ops.linear(x, w)


def _grouped_reference(a, b, ends):
    """torch._grouped_mm spelled as one matmul per group."""
    starts = [0] + ends[:-1]
    if a.dim() == 2 and b.dim() == 3:
        return torch.cat([a[s:e] @ b[g] for g, (s, e) in enumerate(zip(starts, ends))])
    if a.dim() == 3:
        return torch.cat([a[g] @ b[:, s:e] for g, (s, e) in enumerate(zip(starts, ends))], 1)
    return torch.stack([a[:, s:e] @ b[s:e] for s, e in zip(starts, ends)])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "a_shape, b_shape, ends",
    [
        ((48, 32), (3, 32, 16), [8, 40, 48]),  # groups of tokens (MoE)
        ((2, 24, 32), (32, 48), [16, 48]),  # groups of output columns
        ((24, 64), (64, 16), [16, 48, 64]),
    ],  # groups of the contraction
)
def test_grouped_mm_matches_one_matmul_per_group(a_shape, b_shape, ends, device):
    a = make_input(a_shape, torch.bfloat16, device=device)
    b = make_input(b_shape, torch.bfloat16, device=device)
    offsets = torch.tensor(ends, dtype=torch.int32, device=device)

    def build(fd, x, y, o):
        return fd.ops.mul(fd.ops.grouped_mm(x, y, o), 2.0)

    (out,), fd = run_fusion(build, [a, b, offsets])
    want = (_grouped_reference(a.float(), b.float(), ends) * 2.0).to(torch.bfloat16)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.float(), want.float(), rtol=2e-2, atol=2e-1)
    assert ("aten", ["grouped_mm"]) in fd.segment_summary()
    assert "fd.ops.grouped_mm(T0, T1, T2)" in fd.repro_script()


def test_grouped_mm_of_mismatched_groups_is_a_definition_error():
    with pytest.raises(DefinitionError, match="group count"):
        with FusionDefinition() as fd:
            a = fd.define_tensor([8, 4], contiguity=True, dtype=DataType.BFloat16)
            b = fd.define_tensor([3, 4, 2], contiguity=True, dtype=DataType.BFloat16)
            o = fd.define_tensor([2], contiguity=True, dtype=DataType.Int32)
            fd.ops.grouped_mm(a, b, o)


def test_grouped_mm_of_batched_operands_is_a_definition_error():
    with pytest.raises(DefinitionError, match="ranks"):
        with FusionDefinition() as fd:
            a = fd.define_tensor([-1, -1, -1], contiguity=True, dtype=DataType.BFloat16)
            o = fd.define_tensor([-1], contiguity=True, dtype=DataType.Int32)
            fd.ops.grouped_mm(a, a, o)


def test_block_scaled_grouped_mm_is_unsupported():
    with pytest.raises(UnsupportedError, match="block-scaled"):
        with FusionDefinition() as fd:
            a = fd.define_tensor([-1, -1], contiguity=True, dtype=DataType.BFloat16)
            b = fd.define_tensor([-1, -1, -1], contiguity=True, dtype=DataType.BFloat16)
            o = fd.define_tensor([-1], contiguity=True, dtype=DataType.Int32)
            fd.ops.grouped_mm(a, b, o, a, b)
