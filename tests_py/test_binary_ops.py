"""Every binary op of fd.ops against torch on the CPU reference path, for
each dtype, with tensor-tensor, tensor-scalar and broadcast operands."""

import pytest
import torch

import nvfuse
from fusion_helpers import ALL_DTYPES, assert_close, make_input, run_fusion


def _div(a, b):
    # nvfuse's div keeps integers integral with C (truncating) semantics.
    if not (a.is_floating_point() or a.is_complex()):
        return torch.div(a, b, rounding_mode="trunc")
    return torch.div(a, b)


BINARY = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": _div,
    "truediv": torch.true_divide,
    "fmod": torch.fmod,
    "mod": torch.fmod,  # C semantics: the sign of the dividend
    "remainder": torch.remainder,
    "pow": torch.pow,
    "atan2": torch.atan2,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "eq": torch.eq,
    "ne": torch.ne,
    "lt": torch.lt,
    "le": torch.le,
    "gt": torch.gt,
    "ge": torch.ge,
    "logical_and": torch.logical_and,
    "logical_or": torch.logical_or,
    "bitwise_and": torch.bitwise_and,
    "bitwise_or": torch.bitwise_or,
    "bitwise_xor": torch.bitwise_xor,
    "bitwise_left_shift": torch.bitwise_left_shift,
    "bitwise_right_shift": torch.bitwise_right_shift,
    "gcd": torch.gcd,
    "nextafter": torch.nextafter,
}

# Ops whose second operand must avoid zero (division) or stay small.
NONZERO_DIVISOR = {"div", "truediv", "fmod", "mod", "remainder"}
SMALL_NON_NEGATIVE = {"pow", "bitwise_left_shift", "bitwise_right_shift"}


def test_binary_table_covers_every_binary_op():
    arity_two = {name for name, arity, _ in nvfuse._C.pointwise_ops() if arity == 2}
    assert arity_two == set(BINARY)


def _operands(op, dtype, shape_b=(5, 7)):
    a = make_input((5, 7), dtype)
    if op in SMALL_NON_NEGATIVE and dtype != torch.bool:
        b = make_input(shape_b, dtype, 0, 3)
    elif op in NONZERO_DIVISOR and dtype != torch.bool:
        b = make_input(shape_b, dtype, 1, 4)
        b = torch.where(torch.rand(shape_b) < 0.5, -b, b)
    else:
        b = make_input(shape_b, dtype)
    return a, b


def _reference(op, a, b):
    try:
        return BINARY[op](a, b)
    except (RuntimeError, TypeError):
        return None


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_op_matches_torch(op, dtype):
    a, b = _operands(op, dtype)
    expected = _reference(op, a, b)
    build = lambda fd, x, y: getattr(fd.ops, op)(x, y)  # noqa: E731
    if expected is None:
        with pytest.raises(nvfuse.DefinitionTypeError, match=op):
            run_fusion(build, [a, b])
        return
    (out,), _ = run_fusion(build, [a, b])
    assert_close(out, expected)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "maximum", "lt", "remainder"])
def test_binary_op_broadcasts_lower_rank_operand(op, dtype):
    a, b = _operands(op, dtype, shape_b=(7,))
    (out,), _ = run_fusion(lambda fd, x, y: getattr(fd.ops, op)(x, y), [a, b])
    assert_close(out, BINARY[op](a, b))


@pytest.mark.parametrize("scalar", [2, 2.5, True], ids=["int", "float", "bool"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32, torch.bool])
@pytest.mark.parametrize("op", ["add", "mul", "truediv", "eq", "maximum", "pow"])
def test_binary_op_with_constant_matches_torch(op, dtype, scalar):
    if op == "pow" and dtype == torch.bool:
        pytest.skip("torch takes bool ** scalar but not bool ** bool; nvfuse rejects both")
    a = make_input((4, 6), dtype, 1, 3)
    try:
        expected = BINARY[op](a, scalar)
    except (RuntimeError, TypeError):
        pytest.skip("torch rejects this combination")
    build = lambda fd, x: getattr(fd.ops, op)(x, scalar)  # noqa: E731
    try:
        (out,), _ = run_fusion(build, [a])
    except nvfuse.DefinitionTypeError:
        pytest.fail(f"nvfuse rejects {op}({dtype}, {scalar!r}) but torch accepts it")
    assert_close(out, expected)


def test_binary_op_with_symbolic_scalar_input():
    a = torch.randn(3, 4)
    (out,), _ = run_fusion(lambda fd, x, s: fd.ops.sub(x, s), [a, 0.75])
    assert_close(out, a - 0.75)


def test_binary_op_of_two_scalars_gives_scalar_used_in_tensor_op():
    a = torch.randn(3, 4)
    (out,), _ = run_fusion(
        lambda fd, x, s: fd.ops.mul(x, fd.ops.add(s, fd.ops.mul(s, 2))), [a, 1.5]
    )
    assert_close(out, a * 4.5)


def test_nan_propagates_through_maximum_and_minimum():
    a = torch.tensor([float("nan"), 1.0, 2.0])
    b = torch.tensor([0.0, float("nan"), 1.0])
    outs, _ = run_fusion(lambda fd, x, y: (fd.ops.maximum(x, y), fd.ops.minimum(x, y)), [a, b])
    assert_close(outs[0], torch.maximum(a, b))
    assert_close(outs[1], torch.minimum(a, b))


def test_integer_division_truncates_and_mod_follows_dividend_sign():
    a = torch.tensor([7, -7, 7, -7])
    b = torch.tensor([2, 2, -2, -2])
    outs, _ = run_fusion(
        lambda fd, x, y: (fd.ops.div(x, y), fd.ops.mod(x, y), fd.ops.remainder(x, y)),
        [a, b],
    )
    assert outs[0].tolist() == [3, -3, -3, 3]
    assert outs[1].tolist() == [1, -1, 1, -1]
    assert outs[2].tolist() == [1, 1, -1, -1]


@pytest.mark.parametrize("exponent", [2.0, 3.0, -2.0, -1.0, 2])
def test_pow_by_a_number_torch_computes_without_pow_is_products_as_torchs(exponent):
    """torch's pow by 2, 3, -2 and -1 multiplies (x*x, x*x*x, 1/(x*x), 1/x),
    a last bit apart from powf; the kernel and the CPU path do as torch."""
    from nvfuse import DataType, FusionDefinition

    with FusionDefinition() as fd:
        x = fd.define_tensor([-1], contiguity=True, dtype=DataType.Float)
        fd.add_output(fd.ops.pow(x, exponent))
    values = torch.tensor([1.7, -2.3, 0.0, 4.0, 52.17, -1e-3])
    code = fd.cuda_code_for([values])
    (statement,) = [line for line in code.splitlines() if "= pow(T0" in line]
    assert "powf(" not in statement and ("t0 * t0" in statement or " / t0" in statement)
    (out,) = fd.execute([values])
    assert torch.equal(out, torch.pow(values, exponent))
