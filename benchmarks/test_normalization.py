"""Reduction and normalization fusions (workloads/norm_definitions.py)
against eager PyTorch and torch.compile.

Shapes are [rows, width]; NVFUSE_BENCH_SHAPES (e.g. "2048x1600,32768x8192")
picks others than the default grid. Run, and plot with benchmarks/report.py:

    python3 -m pytest benchmarks/test_normalization.py --benchmark-json=norm.json
    python3 benchmarks/report.py norm.json

Eager is what eager PyTorch runs for the operation: torch.sum, torch.var_mean
(over the inner axis, and over the outer one: channels-last batch norm's
statistics), torch.softmax, torch.log_softmax, the ATen layer-norm and
RMS-norm forward and backward ops autograd calls, torch._softmax_backward_data (the backward
of softmax); compile is torch.compile of the same function. Bytes moved are
the bytes of every input read once plus every output written once.
"""

import os

import pytest
import torch


from workloads.norm_definitions import (  # noqa: E402
    CASES,
    EPS,
    assert_case_close,
    define_case,
    output_tolerances,
)

DEFAULT_SHAPES = ["2048x1600", "8192x4096", "32768x8192", "4096x65536", "512x262144"]
SHAPES = [
    s.strip()
    for s in os.environ.get("NVFUSE_BENCH_SHAPES", ",".join(DEFAULT_SHAPES)).split(",")
    if s.strip()
]
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def _parse_shape(shape):
    rows, width = shape.lower().split("x")
    return int(rows), int(width)


# Eager PyTorch for each case, on the case's inputs, in the input dtype.
def _layer_norm_bwd_eager(grad, x, mean, rstd, weight):
    # The backward of torch.nn.functional.layer_norm. Its bias argument only
    # gives dbias its shape and dtype; the weight's are the same.
    return torch.ops.aten.native_layer_norm_backward(
        grad, x, [x.shape[-1]], mean, rstd, weight, weight, [True, True, True]
    )


def _rms_norm_eager(x, weight):
    # What torch.nn.functional.rms_norm runs, with its rstd.
    return torch.ops.aten._fused_rms_norm(x, [x.shape[-1]], weight, EPS)


def _rms_norm_bwd_eager(grad, x, rstd, weight):
    return torch.ops.aten._fused_rms_norm_backward(
        grad, x, [x.shape[-1]], rstd, weight, [True, True]
    )


def _bias_residual_ln_eager(x, bias, residual, weight, bias2):
    h = x + bias + residual
    return torch.nn.functional.layer_norm(h, (x.shape[-1],), weight, bias2, eps=EPS)


EAGER = {
    "sum_inner": lambda x: torch.sum(x, 1),
    "sum_outer": lambda x: torch.sum(x, 0),
    "var_mean_inner": lambda x: torch.var_mean(x, 1, correction=0),
    "var_mean_outer": lambda x: torch.var_mean(x, 0, correction=0),
    "softmax_fwd": lambda x: torch.softmax(x, -1),
    "softmax_bwd": lambda grad, y: torch._softmax_backward_data(grad, y, -1, y.dtype),
    "log_softmax_fwd": lambda x: torch.log_softmax(x, -1),
    "layer_norm_fwd": lambda x, w, b: torch.ops.aten.native_layer_norm(x, [x.shape[-1]], w, b, EPS),
    "layer_norm_bwd": _layer_norm_bwd_eager,
    # Thunder's spelling takes the mean without its kept axis.
    "layer_norm_bwd_thunder": lambda grad, x, mean, rstd, w: _layer_norm_bwd_eager(
        grad, x, mean.unsqueeze(-1), rstd, w
    ),
    "rms_norm_fwd": _rms_norm_eager,
    "rms_norm_bwd": _rms_norm_bwd_eager,
    "bias_residual_layer_norm_fwd": _bias_residual_ln_eager,
}
assert set(EAGER) == set(CASES)


def _as_list(outs):
    return list(outs) if isinstance(outs, (tuple, list)) else [outs]


def _assert_torch_close(name, actual, expected, rows, width):
    """Eager and compiled torch round differently (bf16 intermediates, other
    summation orders) and their statistics may have other dtypes: values
    only, at 10x the nvfuse tolerances, to catch a wrong function."""
    assert len(actual) == len(expected)
    for i, (a, e) in enumerate(zip(actual, expected)):
        assert a.numel() == e.numel(), (name, i, a.shape, e.shape)
        rtol, atol = output_tolerances(name, i, rows, width, e.dtype)
        torch.testing.assert_close(
            a.float().reshape(e.shape), e.float(), rtol=10 * rtol, atol=10 * atol
        )


@pytest.mark.parametrize("executor", ["nvfuse", "eager", "compile"])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("case", list(CASES))
def test_normalization(gpu_benchmark, case, dtype, shape, executor):
    rows, width = _parse_shape(shape)
    torch_dtype = DTYPES[dtype]
    torch.manual_seed(0)
    inputs = CASES[case].make_inputs(rows, width, torch_dtype, "cuda")
    expected = CASES[case].torch_reference(*inputs)
    eager_fn = EAGER[case]
    if executor == "nvfuse":
        fd = define_case(case, torch_dtype)
        fn = lambda: fd.execute(inputs)  # noqa: E731
        assert_case_close(case, fn(), expected, rows, width)
    elif executor == "eager":
        fn = lambda: eager_fn(*inputs)  # noqa: E731
        _assert_torch_close(case, _as_list(fn()), expected, rows, width)
    else:
        # A fresh compile per case: dynamo would otherwise hit its recompile
        # limit across shapes and dtypes and silently run eager.
        torch._dynamo.reset()
        compiled = torch.compile(eager_fn, dynamic=False)
        fn = lambda: compiled(*inputs)  # noqa: E731
        _assert_torch_close(case, _as_list(fn()), expected, rows, width)
    bytes_moved = sum(t.numel() * t.element_size() for t in inputs)
    bytes_moved += sum(t.numel() * t.element_size() for t in expected)
    del expected
    gpu_benchmark(fn, bytes_moved)
