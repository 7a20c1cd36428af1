"""Definitions for benchmarks/test_loss_and_norm_blocks.py, as frameworks
write them for a fusion compiler (inputs cast up to fp32 once, math in
fp32, one cast down), with their torch references."""

import torch

from nvfuse import DataType, FusionDefinition

WIDTH = 8192
P_DROP = 0.1
EPS = 1e-5
NV = {torch.bfloat16: DataType.BFloat16, torch.float32: DataType.Float}


def _log_softmax_parts(fd, x):
    """(x - max, log(sum(exp(x - max)))) of fp32 rows."""
    shifted = x - fd.ops.broadcast(fd.ops.max(x, [1]), [False, True])
    log_sum = fd.ops.log(fd.ops.sum(fd.ops.exp(shifted), [1]))
    return shifted, log_sum


# --- cross-entropy -----------------------------------------------------------
def cross_entropy_fwd_inputs(rows, dtype):
    return [
        torch.randn(rows, WIDTH, dtype=dtype, device="cuda") * 4,
        torch.randint(0, WIDTH, (rows,), device="cuda"),
    ]


def cross_entropy_fwd_torch(logits, labels):
    return torch.nn.functional.cross_entropy(logits.float(), labels, reduction="none")


def cross_entropy_fwd_fd(dtype):
    # The label's logit is gathered from the input (a read of one element
    # per row), not from the log-softmax: gathering from a kernel's
    # intermediate would make that whole intermediate a tensor.
    with FusionDefinition() as fd:
        logits = fd.define_tensor([-1, -1], contiguity=True, dtype=NV[dtype])
        labels = fd.define_tensor([-1], contiguity=True, dtype=DataType.Int)
        picked = fd.ops.take_along_axis(logits, fd.ops.broadcast(labels, [False, True]), 1)
        picked = fd.ops.cast(fd.ops.squeeze(picked, [1]), DataType.Float)
        x = fd.ops.cast(logits, DataType.Float)
        row_max = fd.ops.max(x, [1])
        shifted = x - fd.ops.broadcast(row_max, [False, True])
        log_sum = fd.ops.log(fd.ops.sum(fd.ops.exp(shifted), [1]))
        fd.add_output(log_sum + row_max - picked)
    return fd


def cross_entropy_bwd_inputs(rows, dtype):
    logits, labels = cross_entropy_fwd_inputs(rows, dtype)
    return [logits, labels, torch.rand(rows, device="cuda")]


def cross_entropy_bwd_torch(logits, labels, grad):
    probs = torch.softmax(logits.float(), -1)
    one_hot = torch.nn.functional.one_hot(labels, logits.shape[-1])
    return ((probs - one_hot) * grad[:, None]).to(logits.dtype)


def cross_entropy_bwd_fd(dtype):
    with FusionDefinition() as fd:
        logits = fd.define_tensor([-1, -1], contiguity=True, dtype=NV[dtype])
        labels = fd.define_tensor([-1], contiguity=True, dtype=DataType.Int)
        grad = fd.define_tensor([-1], contiguity=True, dtype=DataType.Float)
        x = fd.ops.cast(logits, DataType.Float)
        shifted, log_sum = _log_softmax_parts(fd, x)
        probs = fd.ops.exp(shifted - fd.ops.broadcast(log_sum, [False, True]))
        columns = fd.ops.broadcast(fd.ops.iota(WIDTH, 0, 1, DataType.Int), [True, False])
        hot = fd.ops.eq(columns, fd.ops.broadcast(labels, [False, True]))
        dx = fd.ops.where(hot, probs - 1.0, probs) * fd.ops.broadcast(grad, [False, True])
        fd.add_output(fd.ops.cast(dx, NV[dtype]))
    return fd


# --- dropout + residual + layer norm -------------------------------------------
def dropout_ln_inputs(rows, dtype):
    x = torch.randn(rows, WIDTH, dtype=dtype, device="cuda")
    return [
        x,
        torch.randn_like(x),
        torch.rand(WIDTH, dtype=dtype, device="cuda"),
        torch.randn(WIDTH, dtype=dtype, device="cuda"),
    ]


def dropout_ln_torch(x, residual, weight, bias):
    y = torch.nn.functional.dropout(x, P_DROP, training=True) + residual
    return torch.nn.functional.layer_norm(y, (x.shape[-1],), weight, bias, EPS), y


def dropout_ln_fd(dtype):
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True, dtype=NV[dtype])
        residual = fd.define_tensor([-1, -1], contiguity=True, dtype=NV[dtype])
        weight = fd.define_tensor([-1], contiguity=True, dtype=NV[dtype])
        bias = fd.define_tensor([-1], contiguity=True, dtype=NV[dtype])
        keep = fd.ops.lt(fd.ops.rand_like(fd.ops.cast(x, DataType.Float)), 1.0 - P_DROP)
        xf, rf = fd.ops.cast(x, DataType.Float), fd.ops.cast(residual, DataType.Float)
        y = fd.ops.where(keep, xf * (1.0 / (1.0 - P_DROP)), 0.0) + rf
        var, mean = fd.ops.var_mean(y, [1], correction=0)
        normed = (y - fd.ops.broadcast(mean, [False, True])) * fd.ops.broadcast(
            fd.ops.rsqrt(var + EPS), [False, True]
        )
        w, b = (
            fd.ops.broadcast(fd.ops.cast(t, DataType.Float), [True, False]) for t in (weight, bias)
        )
        fd.add_output(fd.ops.cast(normed * w + b, NV[dtype]))
        fd.add_output(fd.ops.cast(y, NV[dtype]))
    return fd


# --- nanoGPT attention prologue: causal mask, softmax, dropout ----------------------
SEQ = 1024
HEADS = 12


def attention_prologue_inputs(rows, dtype):
    batch = max(1, rows * WIDTH // (HEADS * SEQ * SEQ))
    scores = torch.randn(batch, HEADS, SEQ, SEQ, dtype=dtype, device="cuda")
    mask = torch.tril(torch.ones(SEQ, SEQ, dtype=torch.bool, device="cuda"))
    return [scores, mask]


def attention_prologue_torch(scores, mask):
    probs = torch.softmax(scores.float().masked_fill(~mask, float("-inf")), -1)
    return torch.nn.functional.dropout(probs, P_DROP, training=True).to(scores.dtype)


def attention_prologue_fd(dtype):
    with FusionDefinition() as fd:
        scores = fd.define_tensor([-1, -1, -1, -1], contiguity=True, dtype=NV[dtype])
        mask = fd.define_tensor([-1, -1], contiguity=True, dtype=DataType.Bool)
        s = fd.ops.cast(scores, DataType.Float)
        s = fd.ops.where(fd.ops.broadcast(mask, [True, True, False, False]), s, float("-inf"))
        shifted = s - fd.ops.broadcast(fd.ops.max(s, [3]), [False, False, False, True])
        e = fd.ops.exp(shifted)
        probs = e / fd.ops.broadcast(fd.ops.sum(e, [3]), [False, False, False, True])
        keep = fd.ops.lt(fd.ops.rand_like(probs), 1.0 - P_DROP)
        fd.add_output(
            fd.ops.cast(fd.ops.where(keep, probs * (1.0 / (1.0 - P_DROP)), 0.0), NV[dtype])
        )
    return fd
