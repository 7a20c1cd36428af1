"""matmul and linear (ATen / cuBLAS calls inside a fusion) against torch,
with pointwise prologues and epilogues, and their definition errors."""

import pytest
import torch

from nvfuse import DataType, FusionDefinition
from nvfuse.errors import DefinitionError, DefinitionTypeError
from fusion_helpers import DEVICES, assert_close, make_input, run_fusion


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "a_shape, b_shape",
    [((8, 16), (16, 4)), ((16,), (16, 4)), ((8, 16), (16,)), ((16,), (16,)),
     ((3, 8, 16), (16, 4)), ((2, 1, 8, 16), (3, 16, 4))],
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
