"""An LM head and its cross-entropy loss computed chunk by chunk of rows,
never holding the whole `rows x vocab` logits.

`loss = cross_entropy(linear(x, weight).float(), target)` materializes the
logits (and, with the cast, their float32 copy) and, in training, their
gradient of the same size: at 8k tokens and a 128k vocabulary, 2 GB each in
bfloat16. Here the rows go in chunks of about CHUNK_LOGITS_BYTES of logits:

    logits  = x[chunk] @ weight.T                        (cuBLAS)
    loss    = an nvfuse row reduction over the chunk's logits: each row's
              log-sum-exp, its target's logit and loss, and, where
              gradients are wanted, the gradient at the target
    g       = softmax * scale, an nvfuse pointwise kernel that writes it
              over the logits, in place; then g at each row's target
              becomes (softmax - 1) * scale
    grad_x[chunk] = g @ weight;  grad_weight += g.T @ x[chunk]   (cuBLAS)

The gradients are computed in the forward, as Liger's fused linear
cross-entropy does: the loss is a scalar, so the backward only scales them
by the loss's gradient, and the GEMMs that would recompute the logits are
not run twice. Peak memory is one chunk's logits (g takes their memory)
instead of the whole logits, their float32 copy and their gradient: the
row reduction and the pointwise kernel read the logits twice, where one
kernel writing g to fresh memory would read them once and hold a second
chunk-sized buffer.

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
from typing import NamedTuple

import torch

from .. import FusionDefinition
from .._C import DataType
from ..pytorch_utils import torch_dtype_to_nvfuse_dtype
from .passes.gemm_alignment import aligned_size

# A chunk's logits (and its g) take about this much memory.
CHUNK_LOGITS_BYTES = 256 << 20

# The row statistics of a chunk in one row reduction (1), or in this many
# parts of each row, whose partial maxima, sums and target logits a second
# small reduction combines. The rows of a 128k vocabulary are too wide for
# one thread block: their one-kernel reduction spreads each row over a
# cluster of blocks. H200, one chunk [1024, 128256] bf16 with the gradient's
# statistics: one reduction 249 us, 2 parts 206, 4 parts 241, 8 parts 218,
# 16 parts 217 (two parts are still cluster rows, of half the width).
STATISTICS_PARTS = 2


def chunk_rows(rows, vocab, itemsize):
    """Rows per chunk: about CHUNK_LOGITS_BYTES of logits, rounded down to
    a multiple of 128 (a GEMM tile) where that is at least one tile."""
    per_chunk = max(1, CHUNK_LOGITS_BYTES // max(1, vocab * itemsize))
    if per_chunk >= rows:
        return rows
    return per_chunk // 128 * 128 if per_chunk >= 128 else per_chunk


def _logits_input(fd, dtype):
    return fd.define_tensor(
        shape=[-1, -1], contiguity=[True, True], dtype=torch_dtype_to_nvfuse_dtype(dtype)
    )


def _row_input(fd, dtype):
    return fd.define_tensor(shape=[-1], contiguity=[True], dtype=dtype)


def _scale_input(fd):
    return fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float)


def _per_row(fd, t, like):
    """`t` [rows] broadcast along the columns of `like` [rows, columns]."""
    return fd.ops.broadcast_in_dim(t, shape=like.shape(), broadcast_dims=[0])


@functools.lru_cache(maxsize=None)
def chunk_statistics_fusion(dtype, vocab, ignore_index, with_gradient):
    """The row reductions over one chunk's logits [rows, padded vocab] of
    `dtype` and its int64 targets [rows] (and, with_gradient, a float32
    scale []): each row's loss in float32 (0 where the target is
    ignore_index) and, with_gradient, its log-sum-exp (float32) and the
    gradient at its target's logit, `(softmax - 1) * scale` in `dtype` (0
    where ignored). Columns at or past `vocab` are padding: they get no
    probability."""
    with FusionDefinition() as fd:
        logits = _logits_input(fd, dtype)
        target = _row_input(fd, DataType.Int)
        scale = _scale_input(fd) if with_gradient else None
        _chunk_statistics(fd, logits, target, scale, vocab, ignore_index)
    return fd


def _chunk_statistics(fd, logits, target, scale, vocab, ignore_index):
    ops = fd.ops
    column = ops.broadcast_in_dim(
        ops.iota(ops.size(logits, 1), dtype=DataType.Int), shape=logits.shape(), broadcast_dims=[1]
    )
    x = ops.cast(logits, DataType.Float)
    x = ops.where(ops.lt(column, vocab), x, float("-inf"))
    row_max = ops.max(x, dims=[1])
    total = ops.sum(ops.exp(x - _per_row(fd, row_max, x)), dims=[1])
    target_logit = ops.sum(ops.where(ops.eq(column, _per_row(fd, target, x)), x, 0.0), dims=[1])
    log_sum_exp = ops.log(total) + row_max
    _row_losses(fd, log_sum_exp, target_logit, target, scale, ignore_index, logits.dtype)


def _row_losses(fd, log_sum_exp, target_logit, target, scale, ignore_index, dtype):
    """The statistics fusions' outputs from each row's log-sum-exp and
    target logit: the loss, and with a scale the log-sum-exp and the
    gradient at the target in `dtype`."""
    ops = fd.ops
    counted = ops.ne(target, ignore_index)
    fd.add_output(ops.where(counted, log_sum_exp - target_logit, 0.0))
    if scale is None:
        return
    fd.add_output(log_sum_exp)
    at_target = (ops.exp(target_logit - log_sum_exp) - 1.0) * scale
    fd.add_output(ops.cast(ops.where(counted, at_target, 0.0), dtype))


@functools.lru_cache(maxsize=None)
def chunk_partials_fusion(dtype, vocab, parts):
    """Over one chunk's logits viewed as [rows * parts, padded vocab /
    parts] of `dtype` (part j of row r is row r * parts + j) and each
    part's int64 target [rows * parts] (its row's): each part's maximum,
    its sum of exp(x - maximum) (0 for a part of padding only) and its
    target's logit (0 where the target is in another part), all float32."""
    with FusionDefinition() as fd:
        logits = _logits_input(fd, dtype)
        target = _row_input(fd, DataType.Int)
        ops = fd.ops
        width = ops.size(logits, 1)
        part = ops.remainder(ops.iota(ops.size(logits, 0), dtype=DataType.Int), parts)
        column = _per_row(fd, part * width, logits) + ops.broadcast_in_dim(
            ops.iota(width, dtype=DataType.Int), shape=logits.shape(), broadcast_dims=[1]
        )
        x = ops.where(ops.lt(column, vocab), ops.cast(logits, DataType.Float), float("-inf"))
        part_max = ops.max(x, dims=[1])
        finite_max = ops.where(ops.isinf(part_max), 0.0, part_max)
        fd.add_output(part_max)
        fd.add_output(ops.sum(ops.exp(x - _per_row(fd, finite_max, x)), dims=[1]))
        fd.add_output(ops.sum(ops.where(ops.eq(column, _per_row(fd, target, x)), x, 0.0), dims=[1]))
    return fd


@functools.lru_cache(maxsize=None)
def chunk_combine_fusion(dtype, ignore_index, with_gradient):
    """chunk_statistics_fusion's outputs from chunk_partials_fusion's,
    viewed as [rows, parts], with the rows' int64 targets [rows] (and,
    with_gradient, a float32 scale [])."""
    with FusionDefinition() as fd:
        part_max, part_sum, part_target = (
            fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
            for _ in range(3)
        )
        target = _row_input(fd, DataType.Int)
        scale = _scale_input(fd) if with_gradient else None
        ops = fd.ops
        row_max = ops.max(part_max, dims=[1])
        total = ops.sum(part_sum * ops.exp(part_max - _per_row(fd, row_max, part_max)), dims=[1])
        _row_losses(
            fd,
            ops.log(total) + row_max,
            ops.sum(part_target, dims=[1]),
            target,
            scale,
            ignore_index,
            torch_dtype_to_nvfuse_dtype(dtype),
        )
    return fd


@functools.lru_cache(maxsize=None)
def chunk_gradient_fusion(dtype, ignore_index):
    """`g = softmax * scale` (0 in rows whose target is ignore_index)
    written over one chunk's logits [rows, padded vocab] of `dtype`, in
    place, from each row's log-sum-exp [rows] (float32), its int64 target
    [rows] and a float32 scale []. Elementwise, so one pointwise kernel
    writes g into the logits' memory: the chunk never holds both (a mask
    of the padding columns would need their index, and a kernel reading
    coordinates does not write in place). The target's column and the
    padding columns are left to the caller."""
    with FusionDefinition() as fd:
        logits = _logits_input(fd, dtype)
        log_sum_exp = _row_input(fd, DataType.Float)
        target = _row_input(fd, DataType.Int)
        scale = _scale_input(fd)
        ops = fd.ops
        row_scale = ops.where(ops.ne(target, ignore_index), scale, 0.0)
        softmax = ops.exp(ops.cast(logits, DataType.Float) - _per_row(fd, log_sum_exp, logits))
        g = softmax * _per_row(fd, row_scale, logits)
        fd.add_output(ops.cast(g, logits.dtype), alias_input=logits)
    return fd


class _Targets(NamedTuple):
    """The index tensors made from the targets, once a call for all rows
    and sliced for each chunk (each chunk making its own was four more
    launches a chunk):

    - `target`, each row's target;
    - `repeated`, each target repeated for the `parts` parts of its row
      (None when the rows are not split in parts);
    - `columns`, each row's target column, 0 in ignored rows, and `rows`,
      the row numbers from 0 (both None without the gradient)."""

    target: torch.Tensor
    repeated: torch.Tensor | None
    columns: torch.Tensor | None
    rows: torch.Tensor | None
    parts: int

    @staticmethod
    def of(target, parts, ignore_index, with_gradient):
        repeated = target.repeat_interleave(parts) if parts > 1 else None
        if not with_gradient:
            return _Targets(target, repeated, None, None, parts)
        columns = torch.where(target == ignore_index, 0, target)
        rows = torch.arange(target.shape[0], device=target.device)
        return _Targets(target, repeated, columns, rows, parts)

    def chunk(self, part):
        """The targets of rows `part` (a slice with a step of 1)."""
        repeated = slice(part.start * self.parts, part.stop * self.parts)
        return _Targets(
            self.target[part],
            None if self.repeated is None else self.repeated[repeated],
            None if self.columns is None else self.columns[part],
            None if self.rows is None else self.rows[: part.stop - part.start],
            self.parts,
        )


def _statistics_parts(width):
    """How many parts each row's statistics are computed in: STATISTICS_PARTS
    where they divide the rows' width, else 1."""
    parts = STATISTICS_PARTS
    return parts if parts > 1 and width % parts == 0 else 1


def _chunk_statistics_of(logits, targets, scale, vocab, ignore_index, with_gradient):
    """chunk_statistics_fusion's outputs for one chunk, in one row
    reduction or, with the targets repeated for parts of each row, in
    two."""
    rows, width = logits.shape
    scales = [scale] if with_gradient else []
    if targets.repeated is None:
        statistics = chunk_statistics_fusion(logits.dtype, vocab, ignore_index, with_gradient)
        return statistics.execute([logits, targets.target, *scales])
    parts = targets.parts
    partials = chunk_partials_fusion(logits.dtype, vocab, parts).execute(
        [logits.view(rows * parts, width // parts), targets.repeated]
    )
    combine = chunk_combine_fusion(logits.dtype, ignore_index, with_gradient)
    return combine.execute([p.view(rows, parts) for p in partials] + [targets.target, *scales])


def _chunk_loss_and_gradient(logits, targets, scale, vocab, ignore_index, with_gradient):
    """Each row's loss over one chunk's logits; with_gradient, the logits'
    memory then holds their gradient g = (softmax - one_hot) * scale (0 in
    ignored rows and in the padding columns)."""
    outputs = _chunk_statistics_of(logits, targets, scale, vocab, ignore_index, with_gradient)
    if not with_gradient:
        return outputs[0]
    losses, log_sum_exp, at_target = outputs
    gradient = chunk_gradient_fusion(logits.dtype, ignore_index)
    gradient.execute([logits, log_sum_exp, targets.target, scale])
    if logits.shape[1] != vocab:
        # The padding columns' exp(0 - log_sum_exp) overflows where the
        # row's logits are very negative, and inf times the zero rows of
        # weight would be NaN in the GEMMs.
        logits[:, vocab:] = 0
    # The target's column: (softmax - 1) * scale, computed in float32 by the
    # statistics fusion, not g there minus scale in the logits' dtype.
    logits[targets.rows, targets.columns] = at_target
    return losses


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
    if reduction == "mean":
        scale = torch.reciprocal((target != ignore_index).sum().to(torch.float32))
    else:
        scale = torch.ones((), dtype=torch.float32, device=x.device)
    grad_x = torch.empty_like(x) if grad_x_wanted else None
    grad_weight = torch.zeros_like(padded_weight) if grad_weight_wanted else None
    losses = torch.empty(rows, dtype=torch.float32, device=x.device)
    step = chunk_rows(rows, padded_weight.shape[0], x.element_size())
    parts = _statistics_parts(padded_weight.shape[0])
    targets = _Targets.of(target, parts, ignore_index, with_gradient)
    for start in range(0, rows, step):
        part = slice(start, min(rows, start + step))
        logits = x[part] @ padded_weight.t()
        losses[part] = _chunk_loss_and_gradient(
            logits, targets.chunk(part), scale, vocab, ignore_index, with_gradient
        )
        g = logits  # its memory holds the gradient now
        if grad_x is not None:
            torch.mm(g, padded_weight, out=grad_x[part])
        if grad_weight is not None:
            grad_weight.addmm_(g.t(), x[part])
        # Free this chunk's logits before the next chunk's GEMM allocates
        # its own: otherwise both chunks' are alive at once.
        del logits, g
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
