"""Translations of the indexing ops (part of translate.TRANSLATIONS):
gathers by index tensors, scatter-adds, embeddings, slice and strided
scatters, and strided views that only relabel a dense tensor. Each takes
what translate.py's translations take; support.py refuses the arguments a
translation here does not cover."""

import math

import torch

from .._C import DataType

aten = torch.ops.aten


def _wrapped(fd, index, size):
    """Negative indices counted from the end, as torch indexes."""
    return fd.ops.where(fd.ops.lt(index, 0), fd.ops.add(index, size), index)


def _flat(fd, x):
    return fd.ops.reshape(x, [-1]) if x.ndim != 1 else x


def _with_rank(fd, x, rank):
    if x.ndim < rank:
        return fd.ops.broadcast(x, [True] * (rank - x.ndim) + [False] * x.ndim)
    return x


def _index(fd, x, indices, *, sizes, out_sizes):
    """x[..., i, j, ...] with integer index tensors on adjacent axes
    (broadcast together): the axes are flattened into one, indexed by the
    row-major linear index, and the result reshaped to torch's."""
    dims = [d for d, index in enumerate(indices) if index is not None]
    rank = max(indices[d].ndim for d in dims)
    linear, stride = None, 1
    for d in reversed(dims):
        term = _with_rank(fd, _wrapped(fd, indices[d], sizes[d]), rank)
        term = term if stride == 1 else fd.ops.mul(term, stride)
        linear = term if linear is None else fd.ops.add(linear, term)
        stride *= sizes[d]
    first, last = dims[0], dims[-1]
    if last > first:
        x = fd.ops.reshape(x, list(sizes[:first]) + [stride] + list(sizes[last + 1 :]))
    return fd.ops.reshape(fd.ops.index_select(x, _flat(fd, linear), first), list(out_sizes))


def _index_put(fd, x, indices, values, accumulate=False, *, sizes):
    """x with values added at rows `indices[0]` (accumulate=True, one
    index tensor on axis 0)."""
    (index,) = indices
    values = fd.ops.reshape(values, [-1] + list(sizes[1:]))
    return fd.ops.index_put_accumulate(x, _flat(fd, index), fd.ops.cast(values, x.dtype))


def _embedding(fd, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return fd.ops.embedding_fwd(indices, weight)


def _scatter(fd, x, dim, index, src):
    return fd.ops.scatter(x, index, src, dim % x.ndim)


def _slice_scatter(fd, base, src, dim=0, start=None, end=None, step=1, *, sizes):
    """base with src written over base[start:end] along dim (step 1): src
    padded to base's shape, chosen where the axis position is inside."""
    dim = dim % base.ndim
    start, end, _ = slice(start, end).indices(sizes[dim])
    end = max(end, start)
    widths = [0] * (2 * base.ndim)
    widths[2 * (base.ndim - 1 - dim)] = start
    widths[2 * (base.ndim - 1 - dim) + 1] = sizes[dim] - end
    padded = fd.ops.pad(src, widths, 0) if any(widths) else src
    if start == 0 and end == sizes[dim]:
        return padded
    positions = fd.ops.iota(sizes[dim], 0, 1, DataType.Int)
    positions = fd.ops.broadcast(positions, [axis != dim for axis in range(base.ndim)])
    inside = fd.ops.logical_and(fd.ops.ge(positions, start), fd.ops.lt(positions, end))
    return fd.ops.where(inside, padded, base)


def dense_order(sizes, strides):
    """The axes of a view of `sizes` and `strides`, outermost first, when
    the view is dense (each stride the product of the sizes inside it,
    size-1 axes anywhere); None otherwise."""
    order = sorted(range(len(sizes)), key=lambda a: (-strides[a] if sizes[a] != 1 else 0, a))
    order = [a for a in order if sizes[a] != 1] + [a for a in order if sizes[a] == 1]
    expected = 1
    for axis in reversed(order):
        if sizes[axis] != 1 and strides[axis] != expected:
            return None
        expected *= sizes[axis]
    return order


def _as_strided(fd, x, size, stride, storage_offset=0):
    """A strided view that relabels a dense row-major x (support.py checks
    that it does): x reshaped to the view's axes in memory order, then
    permuted to the view's order."""
    order = dense_order(list(size), list(stride))
    physical = fd.ops.reshape(x, [size[a] for a in order])
    return fd.ops.permute(physical, [order.index(axis) for axis in range(len(size))])


def _as_strided_scatter(fd, base, src, size, stride, storage_offset=0, *, sizes):
    """src written through a strided view that covers all of a dense
    row-major base (support.py checks that it does): src permuted to
    memory order, reshaped to base's shape."""
    order = dense_order(list(size), list(stride))
    return fd.ops.reshape(fd.ops.permute(src, order), list(sizes))


def covers_dense_row_major(base_meta, size, stride, storage_offset):
    """Whether a view (size, stride, storage_offset) of a row-major
    `base_meta` is a dense relabeling of all of it."""
    return (
        base_meta.is_contiguous()
        and not storage_offset
        and math.prod(size) == base_meta.numel()
        and dense_order(list(size), list(stride)) is not None
    )


INDEXING = {
    aten.index.Tensor: _index,
    aten._unsafe_index.Tensor: _index,
    aten.index_put.default: _index_put,
    aten._unsafe_index_put.default: _index_put,
    aten.embedding.default: _embedding,
    aten.scatter.src: _scatter,
    aten.scatter.value: _scatter,
    aten.slice_scatter.default: _slice_scatter,
    aten.as_strided.default: _as_strided,
    aten.as_strided_scatter.default: _as_strided_scatter,
}
