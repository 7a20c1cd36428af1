"""sum, prod, max, min, var and var_mean against torch on the CPU path."""

import pytest
import torch

import nvfuse
from nvfuse import DataType
from fusion_helpers import FLOAT_DTYPES, assert_close, make_input, run_fusion

TORCH_REDUCTIONS = {
    "sum": lambda x, dims, keepdim: torch.sum(x, dims, keepdim=keepdim),
    "prod": lambda x, dims, keepdim: _prod(x, dims, keepdim),
    "max": lambda x, dims, keepdim: torch.amax(x, dims, keepdim=keepdim),
    "min": lambda x, dims, keepdim: torch.amin(x, dims, keepdim=keepdim),
}


def _prod(x, dims, keepdim):
    for d in sorted(dims, reverse=True):
        x = torch.prod(x, d, keepdim=keepdim)
    return x


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dims", [[0], [2], [-1], [0, 2], [0, 1, 2]], ids=str)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [torch.int32, torch.bool], ids=str)
@pytest.mark.parametrize("op", sorted(TORCH_REDUCTIONS))
def test_reduction_matches_torch(op, dtype, dims, keepdim):
    low, high = (0.5, 1.5) if op == "prod" else (None, None)
    x = make_input((3, 4, 5), dtype, low, high)
    expected = TORCH_REDUCTIONS[op](x, dims, keepdim)
    (out,), _ = run_fusion(lambda fd, t: getattr(fd.ops, op)(t, dims=dims, keepdim=keepdim), [x])
    if dtype in (torch.bfloat16, torch.float16):
        # nvfuse accumulates half-precision reductions in float and rounds
        # once, as torch's CUDA kernels do; compare against that.
        expected = TORCH_REDUCTIONS[op](x.float(), dims, keepdim).to(dtype)
    assert_close(out, expected)


def test_sum_of_all_axes_when_dims_is_omitted():
    x = torch.randn(4, 5)
    (out,), _ = run_fusion(lambda fd, t: fd.ops.sum(t), [x])
    assert_close(out, x.sum())


def test_sum_with_dtype_casts_first():
    x = torch.randint(0, 5, (4, 5), dtype=torch.int32)
    (out,), _ = run_fusion(lambda fd, t: fd.ops.sum(t, [1], dtype=DataType.Double), [x])
    assert_close(out, x.sum(1, dtype=torch.float64))


@pytest.mark.parametrize("correction", [0, 1])
@pytest.mark.parametrize("dims", [[1], [0, 1]], ids=str)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_var_mean_matches_torch(dtype, dims, correction):
    x = make_input((6, 8), dtype)
    (var, mean), _ = run_fusion(lambda fd, t: fd.ops.var_mean(t, dims, correction=correction), [x])
    ref_var, ref_mean = torch.var_mean(x.float(), dims, correction=correction)
    assert_close(var, ref_var.to(dtype))
    assert_close(mean, ref_mean.to(dtype))


def test_var_accepts_the_older_unbiased_keyword():
    x = torch.randn(5, 9)
    (out,), _ = run_fusion(lambda fd, t: fd.ops.var(t, [1], unbiased=False), [x])
    assert_close(out, torch.var(x, 1, correction=0))


def test_var_mean_of_an_integer_tensor_is_a_type_error():
    with pytest.raises(nvfuse.DefinitionTypeError, match="floating-point"):
        run_fusion(lambda fd, t: fd.ops.var_mean(t, [0]), [torch.ones(3, dtype=torch.int64)])


def test_reduction_over_a_bad_axis_is_a_definition_error():
    with pytest.raises(nvfuse.DefinitionError, match="axis 3 is out of range"):
        run_fusion(lambda fd, t: fd.ops.sum(t, [3]), [torch.ones(2, 2)])


def test_max_of_a_complex_tensor_is_a_type_error():
    with pytest.raises(nvfuse.DefinitionTypeError, match="not ordered"):
        run_fusion(lambda fd, t: fd.ops.max(t, [0]), [torch.ones(2, dtype=torch.complex64)])
