"""where, lerp, clamp, threshold, add_alpha, sub_alpha and addcmul against
torch on the CPU reference path."""

import pytest
import torch

import nvfuse
from fusion_helpers import assert_close, make_input, run_fusion

FLOATS = [torch.float32, torch.float64, torch.bfloat16, torch.float16]


def test_ternary_ops_cover_every_op_of_arity_three_or_more():
    wide = {n for n, arity, _ in nvfuse._C.pointwise_ops() if arity >= 3}
    assert wide == {"where", "lerp", "clamp", "threshold", "add_alpha", "sub_alpha", "addcmul"}


@pytest.mark.parametrize("dtype", FLOATS + [torch.int64, torch.bool], ids=str)
def test_where_matches_torch(dtype):
    cond = make_input((4, 5), torch.bool)
    a, b = make_input((4, 5), dtype), make_input((4, 5), dtype)
    (out,), _ = run_fusion(lambda fd, c, x, y: fd.ops.where(c, x, y), [cond, a, b])
    assert_close(out, torch.where(cond, a, b))


def test_where_promotes_its_value_operands_not_its_condition():
    cond = make_input((6,), torch.bool)
    a = make_input((6,), torch.int32)
    (out,), _ = run_fusion(lambda fd, c, x: fd.ops.where(c, x, 0.5), [cond, a])
    assert_close(out, torch.where(cond, a, 0.5))


def test_where_rejects_a_non_bool_condition():
    with pytest.raises(nvfuse.DefinitionTypeError, match="condition must be Bool"):
        run_fusion(
            lambda fd, c, x: fd.ops.where(c, x, x),
            [torch.ones(3, dtype=torch.int64), torch.ones(3)],
        )


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_lerp_with_tensor_and_scalar_weight_matches_torch(dtype):
    a, b, w = (make_input((3, 4), dtype) for _ in range(3))
    outs, _ = run_fusion(
        lambda fd, x, y, z: (fd.ops.lerp(x, y, z), fd.ops.lerp(x, y, 0.25)), [a, b, w]
    )
    assert_close(outs[0], torch.lerp(a, b, w))
    assert_close(outs[1], torch.lerp(a, b, 0.25))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_lerp_with_a_number_in_any_operand_matches_torch(dtype):
    a, w = make_input((4, 5), dtype), make_input((4, 5), dtype, 0.0, 1.0)
    (end, start), _ = run_fusion(
        lambda fd, x, y: (fd.ops.lerp(x, 2.0, y), fd.ops.lerp(-1.0, x, y)), [a, w]
    )
    assert end.dtype == start.dtype == dtype
    assert_close(end, torch.lerp(a, torch.full_like(a, 2.0), w))
    assert_close(start, torch.lerp(torch.full_like(a, -1.0), a, w))


@pytest.mark.parametrize("dtype", FLOATS + [torch.int64], ids=str)
def test_clamp_matches_torch(dtype):
    x = make_input((5, 5), dtype)
    (out,), _ = run_fusion(lambda fd, t: fd.ops.clamp(t, -1, 2), [x])
    assert_close(out, torch.clamp(x, -1, 2))


def test_clamp_accepts_keyword_bounds():
    x = torch.randn(8)
    (out,), _ = run_fusion(lambda fd, t: fd.ops.clamp(t, min=-0.5, max=0.5), [x])
    assert_close(out, torch.clamp(x, -0.5, 0.5))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_threshold_matches_torch_including_nan(dtype):
    x = make_input((10,), dtype)
    x[0] = float("nan")
    (out,), _ = run_fusion(lambda fd, t: fd.ops.threshold(t, 0.5, -7.0), [x])
    assert_close(out, torch.nn.functional.threshold(x, 0.5, -7.0))


@pytest.mark.parametrize("dtype", FLOATS + [torch.int64], ids=str)
def test_add_alpha_and_sub_alpha_match_torch(dtype):
    a, b = make_input((3, 3), dtype), make_input((3, 3), dtype)
    outs, _ = run_fusion(
        lambda fd, x, y: (fd.ops.add_alpha(x, y, 3), fd.ops.sub_alpha(x, y, 2)), [a, b]
    )
    assert_close(outs[0], torch.add(a, b, alpha=3))
    assert_close(outs[1], torch.sub(a, b, alpha=2))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_addcmul_matches_torch(dtype):
    a, b, c = (make_input((2, 6), dtype) for _ in range(3))
    (out,), _ = run_fusion(lambda fd, x, y, z: fd.ops.addcmul(x, y, z, 0.5), [a, b, c])
    assert_close(out, torch.addcmul(a, b, c, value=0.5))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_threshold_compares_against_the_threshold_rounded_to_the_tensor_type(dtype):
    # torch's CUDA kernel rounds the threshold to the tensor's type, so
    # elements equal to the rounded 0.1 take the value; its CPU kernel
    # compares in float and keeps them. nvfuse follows CUDA on every device
    # (the reference evaluator is the oracle of the generated kernels).
    at_threshold = torch.tensor(0.1).to(dtype)
    x = torch.cat([at_threshold.repeat(4), make_input((60,), dtype)])
    (out,), _ = run_fusion(lambda fd, t: fd.ops.threshold(t, 0.1, 2.0), [x])
    expected = torch.where(x <= at_threshold, torch.tensor(2.0, dtype=dtype), x)
    assert_close(out, expected)
