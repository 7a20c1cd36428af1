"""Every unary op of fd.ops against torch on the CPU reference path, for each
dtype: the result dtype must be torch's and the values must match; where
torch rejects a dtype, nvfuse must reject it at definition time."""

import pytest
import torch

import nvfuse
from fusion_helpers import ALL_DTYPES, assert_close, make_input, run_fusion

# op -> (torch reference, (low, high) of the inputs for float dtypes)
UNARY = {
    "abs": (torch.abs, None),
    "acos": (torch.acos, (-0.9, 0.9)),
    "acosh": (torch.acosh, (1.1, 4.0)),
    "asin": (torch.asin, (-0.9, 0.9)),
    "asinh": (torch.asinh, None),
    "atan": (torch.atan, None),
    "atanh": (torch.atanh, (-0.9, 0.9)),
    "bitwise_not": (torch.bitwise_not, None),
    "ceil": (torch.ceil, None),
    "cos": (torch.cos, None),
    "cosh": (torch.cosh, None),
    "erf": (torch.erf, None),
    "erfc": (torch.erfc, None),
    "erfcinv": (
        lambda x: torch.erfinv(1 - (x if x.is_floating_point() else x.float())),
        (0.1, 1.9),
    ),
    "erfinv": (torch.erfinv, (-0.9, 0.9)),
    "exp": (torch.exp, None),
    "exp2": (torch.exp2, None),
    "expm1": (torch.expm1, None),
    "floor": (torch.floor, None),
    "frac": (torch.frac, None),
    "isfinite": (torch.isfinite, None),
    "isinf": (torch.isinf, None),
    "isnan": (torch.isnan, None),
    "isneginf": (torch.isneginf, None),
    "isposinf": (torch.isposinf, None),
    "isreal": (torch.isreal, None),
    "lgamma": (torch.lgamma, (0.1, 5.0)),
    "log": (torch.log, (0.1, 5.0)),
    "log10": (torch.log10, (0.1, 5.0)),
    "log1p": (torch.log1p, (-0.5, 5.0)),
    "log2": (torch.log2, (0.1, 5.0)),
    "logical_not": (torch.logical_not, None),
    "neg": (torch.neg, None),
    "reciprocal": (torch.reciprocal, (0.5, 3.0)),
    "relu": (torch.relu, None),
    "round": (torch.round, None),
    "rsqrt": (torch.rsqrt, (0.1, 5.0)),
    "sigmoid": (torch.sigmoid, None),
    "sign": (torch.sign, None),
    "signbit": (torch.signbit, None),
    "silu": (torch.nn.functional.silu, None),
    "sin": (torch.sin, None),
    "sinh": (torch.sinh, None),
    "sqrt": (torch.sqrt, (0.1, 5.0)),
    "tan": (torch.tan, (-1.2, 1.2)),
    "tanh": (torch.tanh, None),
    "trunc": (torch.trunc, None),
    "set": (torch.clone, None),
    "segment_set": (torch.clone, None),
    "real": (torch.real, None),
    "imag": (torch.imag, None),
}

# Where nvfuse is more permissive than torch, it computes in Float, as torch
# does for every other unary float op (torch lacks the integer kernel).
FLOAT_PROMOTING_EXTENSIONS = {"silu"}


def test_unary_table_covers_every_unary_op():
    arity_one = {name for name, arity, _ in nvfuse._C.pointwise_ops() if arity == 1}
    assert arity_one == set(UNARY)


def _torch_reference(op, x):
    fn, _ = UNARY[op]
    try:
        return fn(x)
    except (RuntimeError, TypeError):
        if op in FLOAT_PROMOTING_EXTENSIONS:
            return fn(x.float())
        return None


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_op_matches_torch(op, dtype):
    _, domain = UNARY[op]
    low, high = domain if (domain and dtype.is_floating_point) else (None, None)
    x = make_input((5, 7), dtype, low, high)
    expected = _torch_reference(op, x)
    if expected is None:
        with pytest.raises(nvfuse.DefinitionTypeError, match=op):
            run_fusion(lambda fd, t: getattr(fd.ops, op)(t), [x])
        return
    (out,), _ = run_fusion(lambda fd, t: getattr(fd.ops, op)(t), [x])
    assert_close(out, expected)


@pytest.mark.parametrize(
    "op",
    [
        "abs",
        "exp",
        "sqrt",
        "real",
        "imag",
        "isnan",
        "neg",
        # torch takes complex here too (the predecessor's clients send them)
        "rsqrt",
        "sigmoid",
        "sinh",
        "tan",
        "log10",
        "log2",
        "log1p",
        "expm1",
        "exp2",
        "silu",
    ],
)
def test_unary_op_complex_matches_torch(op):
    x = torch.randn(4, 3, dtype=torch.complex64)
    (out,), _ = run_fusion(lambda fd, t: getattr(fd.ops, op)(t), [x])
    assert_close(out, UNARY[op][0](x))


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf"), -0.0])
@pytest.mark.parametrize("op", ["isnan", "isinf", "isfinite", "signbit", "abs", "relu"])
def test_unary_op_special_values_match_torch(op, value):
    x = torch.tensor([value, 1.0, -2.0])
    (out,), _ = run_fusion(lambda fd, t: getattr(fd.ops, op)(t), [x])
    assert_close(out, UNARY[op][0](x))


def test_unary_op_on_symbolic_scalar_input():
    (out,), _ = run_fusion(lambda fd, t, s: fd.ops.mul(t, fd.ops.neg(s)), [torch.ones(3), 2.5])
    assert_close(out, torch.full((3,), -2.5))
