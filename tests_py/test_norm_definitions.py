"""The normalization cases of norm_definitions on CPU tensors (the ATen
reference evaluator) against torch: sums, var_mean, softmax, log-softmax,
layer norm and RMS norm forward and backward, bias + residual + layer norm;
fp32 and bf16; NaN and Inf rows."""

import pytest
import torch

from workloads.norm_definitions import (
    CASES,
    VARIANTS,
    assert_case_close,
    check_case,
    define_case,
    run_case,
    with_nan_and_inf,
)

DTYPES = [torch.float32, torch.bfloat16]
# ~5 rows at every width; a single row, and more rows, at a few widths.
SHAPES = [(5, 1), (5, 7), (5, 127), (5, 1600), (1, 127), (64, 7), (33, 1600)]


@pytest.mark.parametrize("rows,width", SHAPES, ids=lambda s: str(s))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", list(CASES))
def test_case_matches_torch(name, dtype, rows, width):
    fd = check_case(name, dtype, rows, width, "cpu")
    assert fd.last_cuda_code() == ""  # CPU inputs: the reference evaluator


@pytest.mark.parametrize("name", list(CASES))
def test_one_definition_serves_every_shape(name):
    """Symbolic sizes: the same definition (one cache entry) runs every
    shape."""
    fd = define_case(name, torch.float32)
    for rows, width in [(2, 3), (7, 1), (3, 130)]:
        torch.manual_seed(rows + width)
        inputs = CASES[name].make_inputs(rows, width, torch.float32, "cpu")
        outs = fd.execute(inputs)
        assert_case_close(name, outs, CASES[name].torch_reference(*inputs), rows, width)
    assert define_case(name, torch.float32).id() == fd.id()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_softmax_backward_matches_autograd(dtype):
    """softmax_bwd against autograd through torch.softmax (the case's own
    reference calls the backward op directly)."""
    torch.manual_seed(0)
    x = torch.randn(6, 300).requires_grad_()
    grad = torch.randn(6, 300).to(dtype)
    y = torch.softmax(x, -1)
    y.backward(grad.float())
    (dx,), _ = run_case("softmax_bwd", [grad, y.detach().to(dtype)])
    if dtype == torch.float32:
        torch.testing.assert_close(dx, x.grad, rtol=1e-4, atol=1e-5)
    else:
        # y enters the bf16 case rounded to bf16; autograd saw it in fp32.
        torch.testing.assert_close(dx.float(), x.grad, rtol=1.6e-2, atol=1e-2)


@pytest.mark.parametrize("width", [7, 1600])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", ["softmax_fwd", "log_softmax_fwd", "layer_norm_fwd"])
def test_nan_and_inf_rows_match_torch(name, dtype, width):
    """A NaN in row 1 and +inf in row 3 poison those rows as they do in
    torch; the other rows are unaffected. Layer norm's mean is torch.mean's
    (+inf for row 3), where torch's Welford mean is NaN (docs/api.md)."""
    torch.manual_seed(width)
    rows = 5
    inputs = CASES[name].make_inputs(rows, width, dtype, "cpu")
    inputs[0] = with_nan_and_inf(inputs[0])
    outs, _ = run_case(name, inputs)
    expected = CASES[name].torch_reference(*inputs)
    if name == "layer_norm_fwd":
        mean = inputs[0].float().mean(-1)
        expected[1] = mean.reshape(expected[1].shape)
        assert outs[1].view(-1)[3] == float("inf")
    assert_case_close(name, outs, expected, rows, width, equal_nan=True)
    clean = [0, 2, 4]
    assert torch.isfinite(outs[0][clean].float()).all()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_layer_norm_with_broadcast_in_dim_keep_sizes(dtype):
    torch.manual_seed(1)
    name = "layer_norm_fwd_broadcast_in_dim"
    inputs = VARIANTS[name].make_inputs(5, 127, dtype, "cpu")
    outs, _ = run_case(name, inputs)
    assert_case_close(name, outs, VARIANTS[name].torch_reference(*inputs), 5, 127)


def _kernel_code(name):
    fd = define_case(name, torch.bfloat16)
    inputs = CASES[name].make_inputs(64, 256, torch.bfloat16, "cpu")
    return fd.cuda_code_for(inputs)  # CPU tensors stand in for the layouts


def test_layer_norm_backward_is_one_kernel_however_it_is_spelled():
    """Thunder's spelling (mean without its kept axis, pow(rstd, 3), sums
    over size-1 axes) is one inner-outer kernel, as nvfuse's own is."""
    own, thunder = _kernel_code("layer_norm_bwd"), _kernel_code("layer_norm_bwd_thunder")
    assert "// ==== nvfuse segment" not in thunder
    assert thunder.count("__global__") == own.count("__global__")
