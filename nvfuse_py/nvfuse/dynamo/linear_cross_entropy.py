"""An LM head and its cross-entropy loss computed chunk by chunk of rows,
never holding the whole `rows x vocab` logits.

`loss = cross_entropy(linear(x, weight).float(), target)` materializes the
logits (and, with the cast, their float32 copy) and, in training, their
gradient of the same size: at 8k tokens and a 128k vocabulary, 2 GB each in
bfloat16. Here the rows go in chunks of about CHUNK_LOGITS_BYTES of logits:

    logits  = x[chunk] @ weight.T                        (cuBLAS)
    loss, g = one nvfuse kernel over the chunk's logits: the rows'
              log-sum-exp, the target's logit, and, where gradients are
              wanted, g = (softmax - one_hot(target)) * scale
    grad_x[chunk] = g @ weight;  grad_weight += g.T @ x[chunk]   (cuBLAS)

The gradients are computed in the forward, as Liger's fused linear
cross-entropy does: the loss is a scalar, so the backward only scales them
by the loss's gradient, and the GEMMs that would recompute the logits are
not run twice. Peak memory is the chunk's logits and g instead of the
whole logits, their float32 copy and their gradient.

Where this differs from torch's composite, on purpose: the loss and g are
computed in float32 from the bfloat16 logits whether or not the caller
cast them (torch computes bfloat16 logits' log-softmax in float32 too, but
rounds the log-probabilities to bfloat16 before the mean); and
grad_weight is summed over the chunks in weight's dtype (each chunk's GEMM
accumulates in float32 and adds to the running sum once), where torch's
single GEMM rounds once. A vocabulary that would put the logits' rows other
than a multiple of 16 bytes apart is padded with zero rows of weight, so
that every GEMM is cuBLAS's aligned kernel; the padded columns get no
probability."""

import functools

import torch

from .. import FusionDefinition
from .._C import DataType
from ..pytorch_utils import torch_dtype_to_nvfuse_dtype
from .passes.gemm_alignment import aligned_size

# A chunk's logits (and its g) take about this much memory.
CHUNK_LOGITS_BYTES = 256 << 20


def chunk_rows(rows, vocab, itemsize):
    """Rows per chunk: about CHUNK_LOGITS_BYTES of logits, rounded down to
    a multiple of 128 (a GEMM tile) where that is at least one tile."""
    per_chunk = max(1, CHUNK_LOGITS_BYTES // max(1, vocab * itemsize))
    if per_chunk >= rows:
        return rows
    return per_chunk // 128 * 128 if per_chunk >= 128 else per_chunk


@functools.lru_cache(maxsize=None)
def chunk_fusion(dtype, vocab, ignore_index, with_gradient):
    """The fusion over one chunk's logits [rows, padded vocab] of `dtype`
    and its int64 targets [rows] (and, with_gradient, a float32 scale
    [] for g): outputs each row's loss in float32 (0 where the target is
    ignore_index) and, with_gradient, g in `dtype`. Columns at or past
    `vocab` are padding: they get no probability."""
    with FusionDefinition() as fd:
        logits = fd.define_tensor(
            shape=[-1, -1], contiguity=[True, True], dtype=torch_dtype_to_nvfuse_dtype(dtype)
        )
        target = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Int)
        scale = None
        if with_gradient:
            scale = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float)
        _chunk_loss(fd, logits, target, scale, vocab, ignore_index)
    return fd


def _chunk_loss(fd, logits, target, scale, vocab, ignore_index):
    ops = fd.ops
    shape = logits.shape()

    def per_row(t):
        return ops.broadcast_in_dim(t, shape=shape, broadcast_dims=[0])

    column = ops.broadcast_in_dim(
        ops.iota(ops.size(logits, 1), dtype=DataType.Int), shape=shape, broadcast_dims=[1]
    )
    x = ops.cast(logits, DataType.Float)
    x = ops.where(ops.lt(column, vocab), x, float("-inf"))
    row_max = ops.max(x, dims=[1])
    exps = ops.exp(x - per_row(row_max))
    total = ops.sum(exps, dims=[1])
    is_target = ops.eq(column, per_row(target))
    target_logit = ops.sum(ops.where(is_target, x, 0.0), dims=[1])
    counted = ops.ne(target, ignore_index)
    row_loss = ops.log(total) + row_max - target_logit
    fd.add_output(ops.where(counted, row_loss, 0.0))
    if scale is None:
        return
    softmax = exps / per_row(total)
    g = ops.where(is_target, softmax - 1.0, softmax)
    g = ops.where(
        per_row(counted), g * ops.broadcast_in_dim(scale, shape=shape, broadcast_dims=[]), 0.0
    )
    fd.add_output(ops.cast(g, logits.dtype))


def _padded(weight):
    """weight with zero rows up to the row count cuBLAS's aligned kernels
    need as the logits' leading dimension."""
    vocab = weight.shape[0]
    padded_vocab = aligned_size(vocab, weight.element_size())
    if padded_vocab == vocab:
        return weight
    padded = weight.new_zeros((padded_vocab, weight.shape[1]))
    padded[:vocab] = weight
    return padded


def _chunked(x, weight, target, ignore_index, reduction, grad_x_wanted, grad_weight_wanted):
    """(loss in float32, grad_x or None, grad_weight or None) over the
    chunks; x [rows, hidden], weight [vocab, hidden], target [rows]."""
    rows, vocab = x.shape[0], weight.shape[0]
    padded_weight = _padded(weight)
    with_gradient = grad_x_wanted or grad_weight_wanted
    fusion = chunk_fusion(x.dtype, vocab, ignore_index, with_gradient)
    if reduction == "mean":
        scale = torch.reciprocal((target != ignore_index).sum().to(torch.float32))
    else:
        scale = torch.ones((), dtype=torch.float32, device=x.device)
    grad_x = torch.empty_like(x) if grad_x_wanted else None
    grad_weight = torch.zeros_like(padded_weight) if grad_weight_wanted else None
    losses = torch.empty(rows, dtype=torch.float32, device=x.device)
    step = chunk_rows(rows, padded_weight.shape[0], x.element_size())
    for start in range(0, rows, step):
        part = slice(start, min(rows, start + step))
        logits = x[part] @ padded_weight.t()
        inputs = [logits, target[part]] + ([scale] if with_gradient else [])
        outputs = fusion.execute(inputs)
        losses[part] = outputs[0]
        if grad_x is not None:
            torch.mm(outputs[1], padded_weight, out=grad_x[part])
        if grad_weight is not None:
            grad_weight.addmm_(outputs[1].t(), x[part])
        # Free this chunk's logits and g before the next chunk's GEMM
        # allocates its logits: otherwise both chunks' buffers are alive at
        # once, the peak of the whole loop.
        del logits, inputs, outputs
    loss = losses.sum() * scale
    if grad_weight is not None and grad_weight.shape[0] != vocab:
        grad_weight = grad_weight[:vocab]
    return loss, grad_x, grad_weight


@torch.library.custom_op("nvfuse::linear_cross_entropy", mutates_args=())
def _linear_cross_entropy_op(
    x: torch.Tensor,
    weight: torch.Tensor,
    target: torch.Tensor,
    ignore_index: int,
    reduction: str,
    grad_x_wanted: bool,
    grad_weight_wanted: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    loss, grad_x, grad_weight = _chunked(
        x, weight, target, ignore_index, reduction, grad_x_wanted, grad_weight_wanted
    )
    return (
        loss,
        x.new_empty(0) if grad_x is None else grad_x,
        x.new_empty(0) if grad_weight is None else grad_weight,
    )


@_linear_cross_entropy_op.register_fake
def _(x, weight, target, ignore_index, reduction, grad_x_wanted, grad_weight_wanted):
    return (
        x.new_empty((), dtype=torch.float32),
        torch.empty_like(x) if grad_x_wanted else x.new_empty(0),
        torch.empty_like(weight) if grad_weight_wanted else x.new_empty(0),
    )


def _setup_context(ctx, inputs, output):
    _, grad_x, grad_weight = output
    ctx.save_for_backward(grad_x, grad_weight)
    ctx.wanted = inputs[5], inputs[6]


def _backward(ctx, grad_loss, _grad_x, _grad_weight):
    grad_x, grad_weight = ctx.saved_tensors
    grad_x_wanted, grad_weight_wanted = ctx.wanted
    return (
        grad_x * grad_loss if grad_x_wanted else None,
        grad_weight * grad_loss if grad_weight_wanted else None,
        None,
        None,
        None,
        None,
        None,
    )


_linear_cross_entropy_op.register_autograd(_backward, setup_context=_setup_context)


def linear_cross_entropy(x, weight, target, ignore_index=-100, reduction="mean", dtype=None):
    """cross_entropy(linear(x, weight), target, ignore_index=,
    reduction=) over x's last axis ("mean" or "sum"), chunk by chunk; the
    loss in `dtype` (default float32). Gradients are computed, in the
    forward, for whichever of x and weight needs one."""
    grad_wanted = torch.is_grad_enabled()
    loss, _, _ = _linear_cross_entropy_op(
        x.reshape(-1, x.shape[-1]),
        weight,
        target.reshape(-1).to(torch.int64),
        ignore_index,
        reduction,
        grad_wanted and x.requires_grad,
        grad_wanted and weight.requires_grad,
    )
    return loss if dtype in (None, torch.float32) else loss.to(dtype)
