"""Transformer building blocks with shape and random ops, against eager
PyTorch and torch.compile: Llama-style rotary embedding (slices, neg, cat,
multiply-add with cos/sin), dropout + residual add, a scatter of
computed values (half of each row's 8192 elements overwritten by
relu(src) * 2 at distinct random columns: the scatter kernel), and an
in-place SGD step (p -= lr * g through add_output(alias_input=p); bytes:
p and g read, p written).

Bytes moved are every input read once plus every output written once (the
random mask is not a tensor anyone reads). NVFUSE_BENCH_TRANSFORMER_SIZES
picks sizes (default "64MB,256MB": the bytes of the main input).

    python3 -m pytest benchmarks/test_transformer_ops.py --benchmark-json=t.json
    python3 benchmarks/report.py t.json
"""

import os

import pytest
import torch

from workloads.gpu_timing import executor_fn
from nvfuse import DataType, FusionDefinition

SIZES = {"16MB": 16 << 20, "64MB": 64 << 20, "256MB": 256 << 20}
SELECTED = [
    s for s in os.environ.get("NVFUSE_BENCH_TRANSFORMER_SIZES", "64MB,256MB").split(",") if s
]
DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}
TORCH_TO_NVFUSE = {torch.bfloat16: DataType.BFloat16, torch.float32: DataType.Float}
HEAD_DIM = 128
SEQ = 4096
HEADS = 32
P_DROP = 0.1
BIG = 1 << 40  # a slice end past any extent


# --- rotary embedding --------------------------------------------------------
def _rope_inputs(size, dtype):
    batch = max(1, size // (HEADS * SEQ * HEAD_DIM * torch.tensor([], dtype=dtype).element_size()))
    q = torch.randn(batch, HEADS, SEQ, HEAD_DIM, dtype=dtype, device="cuda")
    angles = torch.rand(SEQ, HEAD_DIM, device="cuda")
    return [q, angles.cos().to(dtype), angles.sin().to(dtype)]


def _rope_torch(q, cos, sin):
    half = q.shape[-1] // 2
    rotated = torch.cat([-q[..., half:], q[..., :half]], -1)
    return q * cos + rotated * sin


def _rope_fd(dtype):
    # As frameworks write it for nvFuser: inputs cast up to fp32 once, the
    # math in fp32, one cast down (what torch.compile computes as well).
    with FusionDefinition() as fd:
        q = fd.define_tensor([-1, -1, -1, -1], contiguity=True, dtype=TORCH_TO_NVFUSE[dtype])
        cos = fd.define_tensor([-1, -1], contiguity=True, dtype=TORCH_TO_NVFUSE[dtype])
        sin = fd.define_tensor([-1, -1], contiguity=True, dtype=TORCH_TO_NVFUSE[dtype])
        q, cos, sin = (fd.ops.cast(t, DataType.Float) for t in (q, cos, sin))
        half = HEAD_DIM // 2
        x1 = fd.ops.slice(q, [0, 0, 0, 0], [BIG, BIG, BIG, half])
        x2 = fd.ops.slice(q, [0, 0, 0, half], [BIG, BIG, BIG, BIG])
        rotated = fd.ops.cat([fd.ops.neg(x2), x1], -1)
        out = q * cos + rotated * sin
        fd.add_output(fd.ops.cast(out, TORCH_TO_NVFUSE[dtype]))
    return fd


# --- dropout + residual --------------------------------------------------------
def _dropout_inputs(size, dtype):
    rows = max(1, size // (8192 * torch.tensor([], dtype=dtype).element_size()))
    x = torch.randn(rows, 8192, dtype=dtype, device="cuda")
    return [x, torch.randn_like(x)]


def _dropout_torch(x, residual):
    return torch.nn.functional.dropout(x, P_DROP, training=True) + residual


def _dropout_fd(dtype):
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True, dtype=TORCH_TO_NVFUSE[dtype])
        residual = fd.define_tensor([-1, -1], contiguity=True, dtype=TORCH_TO_NVFUSE[dtype])
        keep = fd.ops.lt(fd.ops.rand_like(x), 1.0 - P_DROP)
        x, residual = fd.ops.cast(x, DataType.Float), fd.ops.cast(residual, DataType.Float)
        dropped = fd.ops.where(keep, x * (1.0 / (1.0 - P_DROP)), 0.0)
        fd.add_output(fd.ops.cast(dropped + residual, TORCH_TO_NVFUSE[dtype]))
    return fd


def _check_dropout(out, x, residual):
    # Kept elements are x / (1 - p) + residual, dropped ones the residual;
    # about p of them dropped.
    dropped = (out.float() - residual.float()).abs() < 1e-6
    assert abs(dropped.double().mean().item() - P_DROP) < 0.01
    kept = ~dropped
    torch.testing.assert_close(
        out.float()[kept], (x.float() / (1 - P_DROP) + residual.float())[kept], rtol=2e-2, atol=2e-2
    )


# --- scatter of computed values --------------------------------------------
def _scatter_inputs(size, dtype):
    rows = max(1, size // (8192 * torch.tensor([], dtype=dtype).element_size()))
    x = torch.randn(rows, 8192, dtype=dtype, device="cuda")
    index = torch.argsort(torch.rand(rows, 8192, device="cuda"), dim=1)[:, :4096].contiguous()
    return [x, index, torch.randn(rows, 4096, dtype=dtype, device="cuda")]


def _scatter_torch(x, index, src):
    return x.scatter(1, index, torch.relu(src) * 2.0)


def _scatter_fd(dtype):
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True, dtype=TORCH_TO_NVFUSE[dtype])
        index = fd.define_tensor([-1, -1], contiguity=True, dtype=DataType.Int)
        src = fd.define_tensor([-1, -1], contiguity=True, dtype=TORCH_TO_NVFUSE[dtype])
        fd.add_output(fd.ops.scatter(x, index, fd.ops.relu(src) * 2.0, 1))
    return fd


def _check_scatter(out, x, index, src):
    # distinct columns per row and an exact src: one right answer
    assert torch.equal(out, _scatter_torch(x, index, src))


# --- an in-place update (an SGD step: p -= lr * g) --------------------------
LR = 0.01


def _update_inputs(size, dtype):
    p = torch.randn(
        size // torch.tensor([], dtype=dtype).element_size(), dtype=dtype, device="cuda"
    )
    return [p, torch.randn_like(p)]


def _update_torch(p, g):
    return p.sub_(g, alpha=LR)


def _update_fd(dtype):
    # add_output(..., alias_input=p): nvfuse writes p in place (the pointwise
    # kernel's threads read each element of p only where they write it).
    with FusionDefinition() as fd:
        p = fd.define_tensor([-1], contiguity=True, dtype=TORCH_TO_NVFUSE[dtype])
        g = fd.define_tensor([-1], contiguity=True, dtype=TORCH_TO_NVFUSE[dtype])
        step = fd.ops.cast(p, DataType.Float) - LR * fd.ops.cast(g, DataType.Float)
        fd.add_output(fd.ops.cast(step, TORCH_TO_NVFUSE[dtype]), alias_input=p)
    return fd


def _check_update(out, p, g):
    # every executor updates p itself (the step's values: checked by the test)
    assert out.data_ptr() == p.data_ptr()


CASES = {
    "rope": (_rope_inputs, _rope_torch, _rope_fd, None),
    "sgd_update_in_place": (_update_inputs, _update_torch, _update_fd, _check_update),
    "dropout_residual": (_dropout_inputs, _dropout_torch, _dropout_fd, _check_dropout),
    "scatter_rows": (_scatter_inputs, _scatter_torch, _scatter_fd, _check_scatter),
}


# Cases that update their first input in place (and return nothing else).
IN_PLACE = {"sgd_update_in_place"}


@pytest.mark.parametrize("executor", ["nvfuse", "eager", "compile"])
@pytest.mark.parametrize("size", SELECTED)
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("case", list(CASES))
def test_transformer_op(gpu_benchmark, case, dtype, size, executor):
    make_inputs, torch_fn, make_fd, check = CASES[case]
    torch.manual_seed(0)
    inputs = make_inputs(SIZES[size], DTYPES[dtype])
    run = executor_fn(executor, inputs, torch_fn, lambda: make_fd(DTYPES[dtype]))
    if executor == "nvfuse" and case in IN_PLACE:
        fn = lambda: (run(), inputs[0])[1]  # noqa: E731  (updates inputs[0])
    else:
        fn = (lambda: run()[0]) if executor == "nvfuse" else run  # noqa: E731
    before = inputs[0].clone() if case in IN_PLACE else None
    out = fn()
    if case in IN_PLACE:  # one step taken
        torch.testing.assert_close(
            out.float(), before.float() - LR * inputs[1].float(), rtol=2e-2, atol=2e-2
        )
    if check is None:
        expected = torch_fn(*[t.double() for t in inputs]).to(out.dtype)
        torch.testing.assert_close(out.float(), expected.float(), rtol=2e-2, atol=2e-2)
    else:
        check(out, *inputs)
    bytes_moved = sum(t.numel() * t.element_size() for t in inputs)
    bytes_moved += out.numel() * out.element_size()
    del out
    gpu_benchmark(fn, bytes_moved)
