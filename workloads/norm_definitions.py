"""Normalization and reduction fusions written against the nvfuse Python API,
with the torch functions they must match.

Each entry of CASES is a Case:

    make_inputs(rows, width, dtype, device) -> list of input tensors
    fd_body(fd, *tensors, dtype) -> list of output handles
    torch_reference(*inputs) -> list of output tensors

plus `inputs` (how each input is defined: "NW" a [rows, width] tensor of the
case dtype, "W" a [width] tensor of the case dtype, "N1" a [rows, 1] Float
statistic, "N" a [rows] Float statistic) and `reduced` (per output: None, or "rows"/"width" when the output
is a sum over that many elements; tolerances grow with it, see
output_tolerances).

Inputs are defined with symbolic sizes (-1), so one definition serves every
shape. All math is fp32: bf16 (or fp32) inputs are cast to Float inside the
fusion, outputs are cast back to the input dtype; the statistics mean and
rstd stay Float. The torch references compute in fp32 from the same inputs
and cast back; the backward references run torch's own backward (autograd,
or the backward op autograd calls).

run_case(name, inputs) builds the definition for these inputs and runs it.
"""

import contextlib
import math
from typing import Callable, NamedTuple, Optional, Tuple

import torch
import torch.nn.functional as F

from nvfuse import _C, DataType, FusionDefinition
from nvfuse.pytorch_utils import torch_dtype_to_nvfuse_dtype

EPS = 1e-5
FLOAT = DataType.Float


class Case(NamedTuple):
    make_inputs: Callable
    fd_body: Callable
    torch_reference: Callable
    inputs: Tuple[str, ...]
    reduced: Tuple[Optional[str], ...]


# --- fusion helpers ---------------------------------------------------------


def _up(fd, t):
    """t as Float (a cast only where it is not Float already)."""
    return fd.ops.cast(t, FLOAT) if t.dtype != FLOAT else t


def _down(fd, t, dtype):
    """t (Float) back to the case dtype."""
    return fd.ops.cast(t, dtype) if dtype != FLOAT else t


def _row_mean(fd, t):
    """The mean over the last axis of a [N, W] tensor, kept as [N, 1]."""
    return fd.ops.mean(t, dims=[1], keepdim=True)


# --- input helpers ----------------------------------------------------------


def _randn(shape, dtype, device):
    return torch.randn(shape, dtype=torch.float32, device=device).to(dtype)


def _layer_norm_stats(x):
    """(mean, rstd) of each row, [N, 1] Float, as torch's layer norm saves them."""
    _, mean, rstd = torch.ops.aten.native_layer_norm(x.float(), [x.shape[-1]], None, None, EPS)
    return mean.reshape(x.shape[0], 1), rstd.reshape(x.shape[0], 1)


def _rms_rstd(x):
    return torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + EPS)


def _to(dtype, *tensors):
    return [t.to(dtype) for t in tensors]


# --- sum over the inner / outer axis ----------------------------------------


def _x_inputs(rows, width, dtype, device):
    return [_randn((rows, width), dtype, device)]


def _sum_inner_fd(fd, x, dtype):
    return [_down(fd, fd.ops.sum(_up(fd, x), dims=[1]), dtype)]


def _sum_inner_torch(x):
    return [x.float().sum(1).to(x.dtype)]


def _sum_outer_fd(fd, x, dtype):
    return [_down(fd, fd.ops.sum(_up(fd, x), dims=[0]), dtype)]


def _sum_outer_torch(x):
    return [x.float().sum(0).to(x.dtype)]


# --- var_mean over one axis -------------------------------------------------
# Over the inner axis (a row's statistics), and over the outer one: batch
# norm's statistics of a channels-last activation, [N*H*W, C] with the
# channels innermost, reduced over the rows.


def _var_mean_fd(axis):
    def define(fd, x, dtype):
        var, mean = fd.ops.var_mean(_up(fd, x), dims=[axis], correction=0, keepdim=False)
        return [_down(fd, var, dtype), _down(fd, mean, dtype)]

    return define


def _var_mean_torch(axis):
    def reference(x):
        var, mean = torch.var_mean(x.float(), dim=axis, correction=0)
        return _to(x.dtype, var, mean)

    return reference


# --- softmax ----------------------------------------------------------------


def _softmax_fd(fd, x, dtype):
    xf = _up(fd, x)
    m = fd.ops.max(xf, dims=[1], keepdim=True)
    e = fd.ops.exp(xf - m)
    s = fd.ops.sum(e, dims=[1], keepdim=True)
    return [_down(fd, e / s, dtype)]


def _softmax_torch(x):
    return [torch.softmax(x.float(), -1).to(x.dtype)]


def _softmax_bwd_inputs(rows, width, dtype, device):
    x = _randn((rows, width), torch.float32, device)
    y = torch.softmax(x, -1).to(dtype)
    return [_randn((rows, width), dtype, device), y]


def _softmax_bwd_fd(fd, grad, y, dtype):
    g, yf = _up(fd, grad), _up(fd, y)
    dot = fd.ops.sum(g * yf, dims=[1], keepdim=True)
    return [_down(fd, yf * (g - dot), dtype)]


def _softmax_bwd_torch(grad, y):
    # torch.softmax's autograd node (SoftmaxBackward0) runs exactly this op
    # on (grad, output); autograd itself needs the forward input, which the
    # backward case does not get (test_norm_definitions also checks the
    # case against autograd through torch.softmax).
    dx = torch._softmax_backward_data(grad.float(), y.float(), -1, torch.float32)
    return [dx.to(grad.dtype)]


# --- log-softmax ------------------------------------------------------------


def _log_softmax_fd(fd, x, dtype):
    xf = _up(fd, x)
    m = fd.ops.max(xf, dims=[1], keepdim=True)
    shifted = xf - m
    lse = fd.ops.log(fd.ops.sum(fd.ops.exp(shifted), dims=[1], keepdim=True))
    return [_down(fd, shifted - lse, dtype)]


def _log_softmax_torch(x):
    return [torch.log_softmax(x.float(), -1).to(x.dtype)]


# --- layer norm -------------------------------------------------------------


def _layer_norm_inputs(rows, width, dtype, device):
    return [
        _randn((rows, width), dtype, device),
        _randn((width,), dtype, device),
        _randn((width,), dtype, device),
    ]


def _layer_norm_fd(fd, x, weight, bias, dtype):
    xf = _up(fd, x)
    # nvFuser's style: statistics reduced without keepdim, then broadcast
    # back to [N, 1] explicitly; the weight broadcast to [1, W] explicitly,
    # the bias implicitly (lower rank broadcasts over leading axes).
    var, mean = fd.ops.var_mean(xf, dims=[1], correction=0, keepdim=False)
    mean = fd.ops.broadcast(mean, [False, True])
    rstd = fd.ops.rsqrt(fd.ops.broadcast(var, [False, True]) + EPS)
    w = fd.ops.broadcast(_up(fd, weight), [True, False])
    y = (xf - mean) * rstd * w + _up(fd, bias)
    return [_down(fd, y, dtype), mean, rstd]


def _layer_norm_broadcast_in_dim_fd(fd, x, weight, bias, dtype):
    """layer_norm_fwd with broadcast_in_dim and -1 ("keep the input's
    symbolic size") in its shapes."""
    xf = _up(fd, x)
    var, mean = fd.ops.var_mean(xf, dims=[1], correction=0, keepdim=False)
    mean = fd.ops.broadcast_in_dim(mean, shape=[-1, 1], broadcast_dims=[0])
    var = fd.ops.broadcast_in_dim(var, shape=[-1, 1], broadcast_dims=[0])
    rstd = fd.ops.rsqrt(var + EPS)
    w = fd.ops.broadcast_in_dim(_up(fd, weight), shape=[1, -1], broadcast_dims=[1])
    y = (xf - mean) * rstd * w + _up(fd, bias)
    return [_down(fd, y, dtype), mean, rstd]


def _layer_norm_torch(x, weight, bias):
    y, mean, rstd = torch.ops.aten.native_layer_norm(
        x.float(), [x.shape[-1]], weight.float(), bias.float(), EPS
    )
    return [y.to(x.dtype), mean, rstd]


def _layer_norm_bwd_inputs(rows, width, dtype, device):
    x = _randn((rows, width), dtype, device)
    mean, rstd = _layer_norm_stats(x)
    return [
        _randn((rows, width), dtype, device),
        x,
        mean,
        rstd,
        _randn((width,), dtype, device),
    ]


def _layer_norm_bwd_fd(fd, grad, x, mean, rstd, weight, dtype):
    g, xf, w = _up(fd, grad), _up(fd, x), _up(fd, weight)
    xhat = (xf - mean) * rstd
    gw = g * w
    dx = rstd * (gw - _row_mean(fd, gw) - xhat * _row_mean(fd, gw * xhat))
    dweight = fd.ops.sum(g * xhat, dims=[0])
    dbias = fd.ops.sum(g, dims=[0])
    return [_down(fd, dx, dtype), _down(fd, dweight, dtype), _down(fd, dbias, dtype)]


def _layer_norm_bwd_torch(grad, x, mean, rstd, weight):
    # Autograd recomputes the statistics from x; the case's mean/rstd inputs
    # were computed the same way (fp32, same eps), so they agree.
    del mean, rstd
    with torch.enable_grad():
        xf = x.float().detach().requires_grad_()
        wf = weight.float().detach().requires_grad_()
        bf = torch.zeros_like(wf, requires_grad=True)
        y = F.layer_norm(xf, (x.shape[-1],), wf, bf, eps=EPS)
        y.backward(grad.float())
    return _to(x.dtype, xf.grad, wf.grad, bf.grad)


def _layer_norm_bwd_thunder_inputs(rows, width, dtype, device):
    grad, x, mean, rstd, weight = _layer_norm_bwd_inputs(rows, width, dtype, device)
    return [grad, x, mean.reshape(rows), rstd, weight]


def _layer_norm_bwd_thunder_fd(fd, grad, x, mean, rstd, weight, dtype):
    """layer_norm_bwd as Lightning Thunder spells it for its nvFuser executor:
    the mean arrives without its kept axis, the variance's derivative goes
    through pow(rstd, 3), and two of the row sums are sums over a size-1
    axis. The segmentation must not depend on the spelling: one kernel."""
    g, xf, w = _up(fd, grad), _up(fd, x), _up(fd, weight)
    n, width = x.size(0), x.size(1)
    row, full = [n, 1], [n, width]
    inv_width = fd.ops.reciprocal(fd.ops.cast(width, FLOAT))
    mean_col = fd.ops.broadcast_in_dim(mean, shape=row, broadcast_dims=[0])
    gw = fd.ops.broadcast_in_dim(w, shape=full, broadcast_dims=[1]) * g
    centered = xf - fd.ops.broadcast_in_dim(mean_col, shape=full, broadcast_dims=[0, 1])
    s1 = fd.ops.sum(centered * gw, dims=[1])
    rstd_full = fd.ops.broadcast_in_dim(rstd, shape=full, broadcast_dims=[0, 1])
    rstd_gw = rstd_full * gw
    d_var = (fd.ops.broadcast_in_dim(s1, shape=row, broadcast_dims=[0]) * -0.5) * fd.ops.pow(
        rstd, 3.0
    )
    s2 = fd.ops.sum(fd.ops.neg(rstd_gw), dims=[1])
    d_var_row = fd.ops.sum(d_var, dims=[1])  # a sum over a size-1 axis
    d_mean_row = fd.ops.sum(fd.ops.broadcast_in_dim(s2, shape=row, broadcast_dims=[0]), dims=[1])
    d_var_full = fd.ops.broadcast_in_dim(
        fd.ops.broadcast_in_dim(d_var_row, shape=row, broadcast_dims=[0]),
        shape=full,
        broadcast_dims=[0, 1],
    )
    d_mean_full = fd.ops.broadcast_in_dim(
        fd.ops.broadcast_in_dim(d_mean_row, shape=row, broadcast_dims=[0]),
        shape=full,
        broadcast_dims=[0, 1],
    )
    dx = rstd_gw + (d_mean_full * inv_width + (d_var_full * 2.0) * centered * inv_width)
    dweight = fd.ops.sum(centered * rstd_full * g, dims=[0])
    dbias = fd.ops.sum(g, dims=[0])
    return [_down(fd, dx, dtype), _down(fd, dweight, dtype), _down(fd, dbias, dtype)]


# --- RMS norm ---------------------------------------------------------------


def _rms_norm_inputs(rows, width, dtype, device):
    return [_randn((rows, width), dtype, device), _randn((width,), dtype, device)]


def _rms_norm_fd(fd, x, weight, dtype):
    xf = _up(fd, x)
    rstd = fd.ops.rsqrt(_row_mean(fd, xf * xf) + EPS)
    y = xf * rstd * _up(fd, weight)
    return [_down(fd, y, dtype), rstd]


def _rms_norm_torch(x, weight):
    xf = x.float()
    y = F.rms_norm(xf, (x.shape[-1],), weight.float(), eps=EPS)
    return [y.to(x.dtype), _rms_rstd(xf)]


def _rms_norm_bwd_inputs(rows, width, dtype, device):
    x = _randn((rows, width), dtype, device)
    return [
        _randn((rows, width), dtype, device),
        x,
        _rms_rstd(x),
        _randn((width,), dtype, device),
    ]


def _rms_norm_bwd_fd(fd, grad, x, rstd, weight, dtype):
    g, xf, w = _up(fd, grad), _up(fd, x), _up(fd, weight)
    xhat = xf * rstd
    gw = g * w
    dx = rstd * (gw - xhat * _row_mean(fd, gw * xhat))
    dweight = fd.ops.sum(g * xhat, dims=[0])
    return [_down(fd, dx, dtype), _down(fd, dweight, dtype)]


def _rms_norm_bwd_torch(grad, x, rstd, weight):
    del rstd  # recomputed by autograd from x, as the case's input was
    with torch.enable_grad():
        xf = x.float().detach().requires_grad_()
        wf = weight.float().detach().requires_grad_()
        y = F.rms_norm(xf, (x.shape[-1],), wf, eps=EPS)
        y.backward(grad.float())
    return _to(x.dtype, xf.grad, wf.grad)


# --- bias + residual + layer norm -------------------------------------------


def _bias_residual_ln_inputs(rows, width, dtype, device):
    return [
        _randn((rows, width), dtype, device),
        _randn((width,), dtype, device),
        _randn((rows, width), dtype, device),
        _randn((width,), dtype, device),
        _randn((width,), dtype, device),
    ]


def _bias_residual_ln_fd(fd, x, bias, residual, weight, bias2, dtype):
    h = _up(fd, x) + _up(fd, bias) + _up(fd, residual)
    var, mean = fd.ops.var_mean(h, dims=[1], correction=0, keepdim=True)
    y = (h - mean) * fd.ops.rsqrt(var + EPS) * _up(fd, weight) + _up(fd, bias2)
    return [_down(fd, y, dtype)]


def _bias_residual_ln_torch(x, bias, residual, weight, bias2):
    h = x.float() + bias.float() + residual.float()
    y = F.layer_norm(h, (x.shape[-1],), weight.float(), bias2.float(), eps=EPS)
    return [y.to(x.dtype)]


CASES = {
    "sum_inner": Case(_x_inputs, _sum_inner_fd, _sum_inner_torch, ("NW",), ("width",)),
    "sum_outer": Case(_x_inputs, _sum_outer_fd, _sum_outer_torch, ("NW",), ("rows",)),
    "var_mean_inner": Case(_x_inputs, _var_mean_fd(1), _var_mean_torch(1), ("NW",), (None, None)),
    "var_mean_outer": Case(_x_inputs, _var_mean_fd(0), _var_mean_torch(0), ("NW",), (None, None)),
    "softmax_fwd": Case(_x_inputs, _softmax_fd, _softmax_torch, ("NW",), (None,)),
    "softmax_bwd": Case(
        _softmax_bwd_inputs, _softmax_bwd_fd, _softmax_bwd_torch, ("NW", "NW"), (None,)
    ),
    "log_softmax_fwd": Case(_x_inputs, _log_softmax_fd, _log_softmax_torch, ("NW",), (None,)),
    "layer_norm_fwd": Case(
        _layer_norm_inputs,
        _layer_norm_fd,
        _layer_norm_torch,
        ("NW", "W", "W"),
        (None, None, None),
    ),
    "layer_norm_bwd": Case(
        _layer_norm_bwd_inputs,
        _layer_norm_bwd_fd,
        _layer_norm_bwd_torch,
        ("NW", "NW", "N1", "N1", "W"),
        (None, "rows", "rows"),
    ),
    "layer_norm_bwd_thunder": Case(
        _layer_norm_bwd_thunder_inputs,
        _layer_norm_bwd_thunder_fd,
        _layer_norm_bwd_torch,
        ("NW", "NW", "N", "N1", "W"),
        (None, "rows", "rows"),
    ),
    "rms_norm_fwd": Case(
        _rms_norm_inputs, _rms_norm_fd, _rms_norm_torch, ("NW", "W"), (None, None)
    ),
    "rms_norm_bwd": Case(
        _rms_norm_bwd_inputs,
        _rms_norm_bwd_fd,
        _rms_norm_bwd_torch,
        ("NW", "NW", "N1", "W"),
        (None, "rows"),
    ),
    "bias_residual_layer_norm_fwd": Case(
        _bias_residual_ln_inputs,
        _bias_residual_ln_fd,
        _bias_residual_ln_torch,
        ("NW", "W", "NW", "W", "W"),
        (None,),
    ),
}

# Other spellings of a case, tested on the CPU only (not in CASES).
VARIANTS = {
    "layer_norm_fwd_broadcast_in_dim": CASES["layer_norm_fwd"]._replace(
        fd_body=_layer_norm_broadcast_in_dim_fd
    ),
}


# --- defining and running ---------------------------------------------------

_INPUT_SHAPES = {
    "NW": ([-1, -1], [True, True]),
    "W": ([-1], [True]),
    "N1": ([-1, 1], [True, None]),
    "N": ([-1], [True]),
}


def define_case(name, dtype):
    """The FusionDefinition of case `name` (of CASES or VARIANTS) for inputs
    of torch dtype `dtype`."""
    case = CASES[name] if name in CASES else VARIANTS[name]
    nv_dtype = torch_dtype_to_nvfuse_dtype(dtype)
    with FusionDefinition() as fd:
        handles = []
        for spec in case.inputs:
            shape, contiguity = _INPUT_SHAPES[spec]
            handles.append(
                fd.define_tensor(
                    shape=shape,
                    contiguity=contiguity,
                    dtype=FLOAT if spec in ("N1", "N") else nv_dtype,
                )
            )
        for out in case.fd_body(fd, *handles, nv_dtype):
            fd.add_output(out)
    return fd


def run_case(name, inputs):
    """Defines case `name` for the dtype of inputs[0], runs it on `inputs`;
    returns (outputs, fd)."""
    fd = define_case(name, inputs[0].dtype)
    return fd.execute(inputs), fd


def check_case(name, dtype, rows, width, device):
    """Runs case `name` on fresh inputs (seeded by the shape) and checks its
    outputs against the torch reference; returns the FusionDefinition."""
    torch.manual_seed(rows * 100003 + width)
    case = CASES[name]
    inputs = case.make_inputs(rows, width, dtype, device)
    outs, fd = run_case(name, inputs)
    assert_case_close(name, outs, case.torch_reference(*inputs), rows, width)
    return fd


@contextlib.contextmanager
def reduction_tuning(**changes):
    """The inner reduction scheduler's tuning (nvfuse._C.set_reduction_tuning)
    with `changes`, restored after."""
    names = (
        "elements_per_thread",
        "max_persistent_threads",
        "chunked_threads",
        "pipelining",
        "max_cluster",
        "carry_exps",
        "staging",
        "streamed_cluster",
        "outer_rows",
        "width_buckets",
    )
    default = dict(zip(names, _C.reduction_tuning()))
    _C.set_reduction_tuning(**{**default, **changes})
    try:
        yield
    finally:
        _C.set_reduction_tuning(**default)


def with_nan_and_inf(x):
    """x with a NaN in row 1 and +inf in row 3 (rows 0, 2 and 4 clean)."""
    x = x.clone()
    x[1, 3] = float("nan")
    x[3, 0] = float("inf")
    return x


def output_tolerances(name, index, rows, width, dtype):
    """(rtol, atol) for output `index` of case `name`.

    bf16/fp16 outputs: rtol 1.6e-2, atol 1e-2 (a bf16 ulp is 2^-8 relative;
    both sides compute in fp32 and round once, so they differ by at most an
    ulp). fp32: rtol 1e-4, atol 1e-5, but a sum over n elements may cancel to
    near zero while its rounding error (different summation orders in torch
    and nvfuse) grows like sqrt(n) times the terms' size (~1 here), so the
    atol of such outputs is scaled by sqrt(n).

    Layer-norm backward at width 1: the variance is 0, so rstd = eps^-1/2
    ~ 316 amplifies the rounding of x - mean; the exact dx and dweight are 0
    (what nvfuse computes), torch returns noise of up to ~1e-4, so those
    outputs get atol 1e-3 (times sqrt(n) for the sums)."""
    if dtype in (torch.bfloat16, torch.float16):
        return 1.6e-2, 1e-2
    reduced = (CASES[name] if name in CASES else VARIANTS[name]).reduced[index]
    n = {"rows": rows, "width": width, None: 1}[reduced]
    atol = 1e-3 if (name.startswith("layer_norm_bwd") and width == 1) else 1e-5
    return 1e-4, atol * max(1.0, math.sqrt(n))


def assert_case_close(name, actual, expected, rows, width, equal_nan=False):
    """Every output of case `name` matches torch's: same dtype and shape,
    values within output_tolerances."""
    assert len(actual) == len(expected), (len(actual), len(expected))
    for i, (a, e) in enumerate(zip(actual, expected)):
        assert a.dtype == e.dtype, (name, i, a.dtype, e.dtype)
        assert a.shape == e.shape, (name, i, a.shape, e.shape)
        rtol, atol = output_tolerances(name, i, rows, width, e.dtype)
        torch.testing.assert_close(
            a.float(),
            e.float(),
            rtol=rtol,
            atol=atol,
            equal_nan=equal_nan,
            msg=lambda m, i=i: f"{name} output {i}: {m}",
        )


__all__ = [
    "CASES",
    "Case",
    "EPS",
    "VARIANTS",
    "assert_case_close",
    "define_case",
    "output_tolerances",
    "run_case",
]


def define_column_sums(count, rows, width, dtype):
    """A fusion of `count` independent column sums, each of its own [rows,
    width] input of nvfuse `dtype`: a backward's bias gradients, which the
    torch.compile backend groups into one region."""
    with FusionDefinition() as fd:
        for _ in range(count):
            t = fd.define_tensor(shape=[rows, width], contiguity=[True, True], dtype=dtype)
            fd.add_output(fd.ops.sum(t, dims=[0]))
    return fd
