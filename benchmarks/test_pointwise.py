"""Pointwise fusions against eager PyTorch and torch.compile.

Sizes are the bytes of the main input, 1 MB to 1 GB; NVFUSE_BENCH_SIZES
(e.g. "1MB,64MB") picks a subset. Run, and plot with benchmarks/report.py:

    python3 -m pytest benchmarks/test_pointwise.py --benchmark-json=pointwise.json
    python3 benchmarks/report.py pointwise.json
"""

import math
import os

import pytest
import torch

from nvfuse import DataType, FusionDefinition
from nvfuse.pytorch_utils import torch_dtype_to_nvfuse_dtype

SIZES = {
    "1MB": 1 << 20,
    "4MB": 4 << 20,
    "16MB": 16 << 20,
    "64MB": 64 << 20,
    "256MB": 256 << 20,
    "1GB": 1 << 30,
}
SELECTED = os.environ.get("NVFUSE_BENCH_SIZES", ",".join(SIZES)).split(",")
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
COLUMNS = 4096


def _upcast(fd, t):
    return fd.ops.cast(t, DataType.Float) if t.dtype != DataType.Float else t


def _downcast(fd, t, dtype):
    return fd.ops.cast(t, dtype) if dtype != DataType.Float else t


# Each case: (make inputs, nvfuse body, torch function). The nvfuse body and
# the torch function compute in fp32 and return the input dtype.
def _matrix(numel, dtype):
    return torch.randn(numel // COLUMNS, COLUMNS, device="cuda", dtype=dtype)


def _add_mul_relu_inputs(numel, dtype):
    return [_matrix(numel, dtype) for _ in range(3)]


def _add_mul_relu_fd(fd, a, b, c, dtype):
    a, b, c = (_upcast(fd, t) for t in (a, b, c))
    return _downcast(fd, fd.ops.relu((a + b) * c), dtype)


def _add_mul_relu_torch(a, b, c):
    return torch.relu((a.float() + b.float()) * c.float()).to(a.dtype)


def _gelu_inputs(numel, dtype):
    return [_matrix(numel, dtype), torch.randn(COLUMNS, device="cuda", dtype=dtype)]


def _gelu_fd(fd, x, bias, dtype):
    h = _upcast(fd, x) + _upcast(fd, bias)
    inner = math.sqrt(2 / math.pi) * (h + 0.044715 * h * h * h)
    return _downcast(fd, 0.5 * h * (1.0 + fd.ops.tanh(inner)), dtype)


def _gelu_torch(x, bias):
    h = x.float() + bias.float()
    return torch.nn.functional.gelu(h, approximate="tanh").to(x.dtype)


def _chain_inputs(numel, dtype):
    return [_matrix(numel, dtype)]


def _chain_fd(fd, x, dtype):
    h = _upcast(fd, x)
    h = fd.ops.sin(h * 1.1 + 0.5)
    h = fd.ops.exp(h) - 1.0
    h = fd.ops.tanh(h * h)
    h = fd.ops.maximum(h, 0.01) + fd.ops.sigmoid(h)
    return _downcast(fd, h, dtype)


def _chain_torch(x):
    h = x.float()
    h = torch.sin(h * 1.1 + 0.5)
    h = torch.exp(h) - 1.0
    h = torch.tanh(h * h)
    h = torch.clamp_min(h, 0.01) + torch.sigmoid(h)
    return h.to(x.dtype)


def _row_add_inputs(numel, dtype):
    return [_matrix(numel, dtype), torch.randn(COLUMNS, device="cuda", dtype=dtype)]


def _row_add_fd(fd, x, row, dtype):
    return _downcast(fd, _upcast(fd, x) + _upcast(fd, row), dtype)


def _row_add_torch(x, row):
    return (x.float() + row.float()).to(x.dtype)


def _nchw_inputs(numel, dtype):
    n, c = 8, 64
    hw = max(1, int(math.sqrt(numel // (n * c))))
    return [torch.randn(n, c, hw, hw, device="cuda", dtype=dtype)]


def _channels_last_inputs(numel, dtype):
    return [x.to(memory_format=torch.channels_last) for x in _nchw_inputs(numel, dtype)]


def _channels_last_fd(fd, x, dtype):
    return _downcast(fd, fd.ops.relu(_upcast(fd, x) * 2.0 + 1.0), dtype)


def _channels_last_torch(x):
    return torch.relu(x.float() * 2.0 + 1.0).to(x.dtype)


def _transpose_add_inputs(numel, dtype):
    rows = numel // COLUMNS
    return [_matrix(numel, dtype), torch.randn(COLUMNS, rows, device="cuda", dtype=dtype).t()]


def _transpose_add_fd(fd, x, y, dtype):
    return _downcast(fd, _upcast(fd, x) + _upcast(fd, y), dtype)


def _transpose_add_torch(x, y):
    return (x.float() + y.float()).to(x.dtype)


def _to_channels_last_torch(x):
    y = torch.relu(x.float() * 2.0 + 1.0).to(x.dtype)
    return y.contiguous(memory_format=torch.channels_last)


def _split_heads_fd(fd, x, bias, dtype):
    # A reshape of a computed value between pointwise ops: one coordinate
    # kernel, not two kernels around an ATen view.
    h = fd.ops.reshape(_upcast(fd, x) + _upcast(fd, bias), [-1, 32, COLUMNS // 32])
    return _downcast(fd, h * 0.5 + 1.0, dtype)


def _split_heads_torch(x, bias):
    h = (x.float() + bias.float()).reshape(-1, 32, COLUMNS // 32)
    return (h * 0.5 + 1.0).to(x.dtype)


def _cumsum_fd(fd, x, dtype):
    # A prefix sum along the rows with work before and after it: one scan
    # kernel (a warp per row).
    return _downcast(fd, fd.ops.cumsum(_upcast(fd, x) * 2.0, 1) + 1.0, dtype)


def _cumsum_torch(x):
    return (torch.cumsum(x.float() * 2.0, 1) + 1.0).to(x.dtype)


CASES = {
    "add_mul_relu": (_add_mul_relu_inputs, _add_mul_relu_fd, _add_mul_relu_torch),
    "bias_gelu": (_gelu_inputs, _gelu_fd, _gelu_torch),
    "chain10": (_chain_inputs, _chain_fd, _chain_torch),
    "row_broadcast_add": (_row_add_inputs, _row_add_fd, _row_add_torch),
    "channels_last": (_channels_last_inputs, _channels_last_fd, _channels_last_torch),
    # Inputs and outputs that disagree on the innermost axis: the transpose
    # scheduler's tiles.
    "transpose_add": (_transpose_add_inputs, _transpose_add_fd, _transpose_add_torch),
    "to_channels_last": (_nchw_inputs, _channels_last_fd, _to_channels_last_torch),
    "bias_split_heads": (_gelu_inputs, _split_heads_fd, _split_heads_torch),
    "scaled_cumsum": (_chain_inputs, _cumsum_fd, _cumsum_torch),
}


SUM_ATOL = {"scaled_cumsum": 1e-3}


def _nvfuse_callable(body, inputs, dtype, layout_like):
    nv_dtype = torch_dtype_to_nvfuse_dtype(dtype)
    with FusionDefinition() as fd:
        handles = [fd.from_pytorch(t) for t in inputs]
        out = body(fd, *handles, nv_dtype)
        # The output takes the layout of torch's result (channels_last...).
        order = sorted(range(layout_like.dim()), key=lambda d: -layout_like.stride(d))
        stride_order = [0] * layout_like.dim()
        for rank, axis in enumerate(reversed(order)):
            stride_order[axis] = rank
        fd.add_output(out, stride_order=stride_order)
    return lambda: fd.execute(inputs)


@pytest.mark.parametrize("executor", ["nvfuse", "eager", "compile"])
@pytest.mark.parametrize("size", [s for s in SIZES if s in SELECTED])
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("case", list(CASES))
def test_pointwise(gpu_benchmark, case, dtype, size, executor):
    make_inputs, body, torch_fn = CASES[case]
    torch_dtype = DTYPES[dtype]
    numel = SIZES[size] // torch_dtype.itemsize
    inputs = make_inputs(numel, torch_dtype)
    expected = torch_fn(*inputs)
    if executor == "nvfuse":
        fn = _nvfuse_callable(body, inputs, torch_dtype, expected)
        (out,) = fn()
        assert out.stride() == expected.stride()
    elif executor == "eager":
        fn = lambda: torch_fn(*inputs)  # noqa: E731
        out = fn()
    else:
        # A fresh compile per case: dynamo would otherwise hit its recompile
        # limit across sizes and dtypes and silently run eager.
        torch._dynamo.reset()
        compiled = torch.compile(torch_fn, dynamic=False)
        fn = lambda: compiled(*inputs)  # noqa: E731
        out = fn()
    tol = 2e-2 if torch_dtype == torch.bfloat16 else 1e-4
    # Sums of 4096 terms: eager, torch.compile and nvfuse add in different
    # orders, so values near zero differ by ~1e-4 absolute.
    atol = max(tol, SUM_ATOL.get(case, 0.0))
    torch.testing.assert_close(out, expected, rtol=tol, atol=atol)
    bytes_moved = sum(t.numel() * t.element_size() for t in inputs)
    bytes_moved += expected.numel() * expected.element_size()
    gpu_benchmark(fn, bytes_moved)
