"""ATen (and prims) FX nodes as nvfuse ops: one translation per overload.

A translation takes the FusionDefinition and the node's arguments, with
FX nodes already replaced by nvfuse handles (tensors, symbolic scalars) and
everything else as FX gives it (Python numbers, lists, dtypes), and returns
the handle (or tuple of handles) of the node's value. `TRANSLATIONS` is the
table: an overload that is not in it stays an ATen call in the graph, so
adding an op is one entry here (support.py derives what the partitioner
may fuse from this table).

Each result is then cast to the dtype torch's meta value says the node has
(`node.meta["val"]`), so a difference in type promotion can never leak
into later nodes."""

import operator

import torch

from .._C import DataType
from ..pytorch_utils import torch_dtype_to_nvfuse_dtype
from .translate_indexing import INDEXING

aten = torch.ops.aten
prims = torch.ops.prims


def _unary(name):
    return lambda fd, x: getattr(fd.ops, name)(x)


def _binary(name):
    return lambda fd, a, b: getattr(fd.ops, name)(a, b)


def _scaled(fd, b, alpha):
    return b if alpha == 1 else fd.ops.mul(b, alpha)


def _add(fd, a, b, alpha=1):
    return fd.ops.add(a, _scaled(fd, b, alpha))


def _sub(fd, a, b, alpha=1):
    return fd.ops.sub(a, _scaled(fd, b, alpha))


def _rsub(fd, a, b, alpha=1):
    return fd.ops.sub(b, _scaled(fd, a, alpha))


def _div_mode(fd, a, b, rounding_mode=None):
    quotient = fd.ops.truediv(a, b)
    if rounding_mode is None:
        return quotient
    return (fd.ops.trunc if rounding_mode == "trunc" else fd.ops.floor)(quotient)


def _clamp(fd, x, min=None, max=None):
    if min is not None:
        x = fd.ops.maximum(x, min)
    if max is not None:
        x = fd.ops.minimum(x, max)
    return x


def _nvfuse_dtype(dtype):
    return None if dtype is None else torch_dtype_to_nvfuse_dtype(dtype)


def _dims(x, dims):
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return list(range(x.ndim))
    return [dims] if isinstance(dims, int) else list(dims)


def _reduction(name):
    def translate(fd, x, dims=None, keepdim=False, *, dtype=None):
        if dtype is not None:
            x = fd.ops.cast(x, _nvfuse_dtype(dtype))
        return getattr(fd.ops, name)(x, _dims(x, dims), keepdim)

    return translate


def _sum_all(fd, x, *, dtype=None):
    return _reduction("sum")(fd, x, None, False, dtype=dtype)


def _var(fd, x, dims=None, *, correction=None, keepdim=False):
    return fd.ops.var(x, _dims(x, dims), 1 if correction is None else correction, keepdim)


def _var_mean(fd, x, dims=None, *, correction=None, keepdim=False):
    return fd.ops.var_mean(x, _dims(x, dims), 1 if correction is None else correction, keepdim)


def _cast(fd, x, dtype=None, **_ignored):
    return x if dtype is None else fd.ops.cast(x, _nvfuse_dtype(dtype))


def _reshape(fd, x, shape):
    return fd.ops.reshape(x, list(shape))


def _transpose(fd, x, dim0, dim1):
    dims = list(range(x.ndim))
    dim0, dim1 = dim0 % max(x.ndim, 1), dim1 % max(x.ndim, 1)
    dims[dim0], dims[dim1] = dims[dim1], dims[dim0]
    return fd.ops.permute(x, dims)


def _t(fd, x):
    return x if x.ndim < 2 else fd.ops.permute(x, [1, 0])


def _unsqueeze(fd, x, dim):
    rank = x.ndim + 1
    dim = dim % rank
    return fd.ops.broadcast(x, [axis == dim for axis in range(rank)])


def _squeeze(fd, x, dims=None, *, sizes):
    dims = range(x.ndim) if dims is None else ([dims] if isinstance(dims, int) else dims)
    ones = sorted({d % x.ndim for d in dims if sizes[d % x.ndim] == 1})
    return fd.ops.squeeze(x, ones) if ones else fd.ops.set(x)


def _expand(fd, x, sizes, *, implicit=False):
    sizes = list(sizes)
    new = len(sizes) - x.ndim
    if new > 0:
        x = fd.ops.broadcast(x, [True] * new + [False] * x.ndim)
    return fd.ops.expand(x, sizes)


def _slice(fd, x, dim=0, start=None, end=None, step=1, *, sizes):
    dim = dim % x.ndim
    starts = [0] * x.ndim
    ends = list(sizes)
    steps = [1] * x.ndim
    starts[dim] = 0 if start is None else start
    ends[dim] = sizes[dim] if end is None else end
    steps[dim] = step
    return fd.ops.slice(x, starts, ends, steps)


def _legacy_empty(sizes):
    return len(sizes) == 1 and isinstance(sizes[0], int) and sizes[0] == 0


def _cat(fd, tensors, dim=0, *, operand_sizes):
    """torch.cat, which skips 1-D operands of size 0 whatever the others'
    rank (transformers' caches start from such an empty tensor)."""
    kept = [t for t, sizes in zip(tensors, operand_sizes) if not _legacy_empty(sizes)]
    if not kept:
        return fd.ops.set(tensors[0])
    return fd.ops.cat(kept, dim) if len(kept) > 1 else fd.ops.set(kept[0])


def _full(fd, size, fill_value, *, dtype=None, **_ignored):
    dtype = dtype or torch.get_default_dtype()
    return fd.ops.full(list(size), fill_value, _nvfuse_dtype(dtype))


def _scalar_tensor(fd, value, *, dtype=None, **_ignored):
    return _full(fd, [], value, dtype=dtype)


def _clone(fd, x, *, expanded_axes, **_ignored):
    if not expanded_axes:
        return fd.ops.set(x)
    # torch's clone of an expanded tensor writes every element (the result
    # is dense); a copy of nvfuse's keeps the expanded axes (a stride-0
    # output, which no generated kernel writes: Llama's repeat_kv ran on
    # the reference evaluator). A select of x under an everywhere-true
    # tensor of the full shape is the same values on ordinary axes.
    everywhere = fd.ops.full(fd.ops.shape(x), True, DataType.Bool)
    return fd.ops.where(everywhere, x, x)


def _index_select(fd, x, dim, index):
    return fd.ops.index_select(x, index, dim)


def _gather(fd, x, dim, index, *, sparse_grad=False):
    return fd.ops.gather(x, index, dim)


def _getitem(fd, values, k):
    return values[k]


UNARY = [
    "abs",
    "acos",
    "asin",
    "atan",
    "ceil",
    "cos",
    "cosh",
    "erf",
    "erfc",
    "exp",
    "exp2",
    "expm1",
    "floor",
    "isinf",
    "isnan",
    "log",
    "log10",
    "log1p",
    "log2",
    "logical_not",
    "neg",
    "reciprocal",
    "relu",
    "round",
    "rsqrt",
    "sigmoid",
    "sign",
    "sin",
    "sinh",
    "sqrt",
    "tan",
    "tanh",
    "trunc",
    "bitwise_not",
]
BINARY = {  # aten name: fd.ops name
    "mul": "mul",
    "maximum": "maximum",
    "minimum": "minimum",
    "eq": "eq",
    "ne": "ne",
    "lt": "lt",
    "le": "le",
    "gt": "gt",
    "ge": "ge",
    "logical_and": "logical_and",
    "logical_or": "logical_or",
    "bitwise_and": "bitwise_and",
    "bitwise_or": "bitwise_or",
    "bitwise_xor": "bitwise_xor",
    "atan2": "atan2",
    "remainder": "remainder",
    "fmod": "fmod",
}


def _copy(fd, target, src, non_blocking=False, *, sizes):
    """aten.copy (and functionalization's copy_ into an input): src
    broadcast to target's shape; the cast to target's dtype follows from
    the meta value."""
    return _expand(fd, src, sizes)


def _full_like(fd, x, fill_value, *, dtype=None, sizes, **_ignored):
    return fd.ops.full(list(sizes), fill_value, _nvfuse_dtype(dtype) if dtype else x.dtype)


def _arange(fd, *bounds, dtype=None, out_sizes, **_ignored):
    start, step = (0, 1) if len(bounds) == 1 else (bounds[0], bounds[2] if len(bounds) > 2 else 1)
    if dtype is None:
        exact = all(isinstance(b, int) for b in bounds)
        dtype = torch.int64 if exact else torch.get_default_dtype()
    return fd.ops.iota(out_sizes[0], start, step, _nvfuse_dtype(dtype))


def _any(fd, x, dims=None, keepdim=False):
    nonzero = fd.ops.cast(fd.ops.ne(x, False if x.dtype == DataType.Bool else 0), DataType.Int)
    return fd.ops.gt(fd.ops.sum(nonzero, _dims(x, dims), keepdim), 0)


def _cumsum(fd, x, dim, *, dtype=None):
    if dtype is not None:
        x = fd.ops.cast(x, _nvfuse_dtype(dtype))
    return fd.ops.cumsum(x, dim % max(x.ndim, 1))


def _constant_pad_nd(fd, x, pad, value=0):
    return fd.ops.pad(x, list(pad), value)


def _split_with_sizes(fd, x, split_sizes, dim=0, *, sizes):
    dim = dim % x.ndim
    pieces, start = [], 0
    for length in split_sizes:
        pieces.append(_slice(fd, x, dim, start, start + length, sizes=sizes))
        start += length
    return tuple(pieces)


def _split(fd, x, split_size, dim=0, *, sizes):
    extent = sizes[dim % x.ndim]
    lengths = [min(split_size, extent - s) for s in range(0, extent, split_size)] or [0]
    return _split_with_sizes(fd, x, lengths, dim, sizes=sizes)


def _select(fd, x, dim, index, *, sizes):
    dim = dim % x.ndim
    return fd.ops.select(x, index % sizes[dim] if index < 0 else index, dim)


def _native_dropout(fd, x, p, train):
    """(x * mask / (1 - p), mask), the mask drawn from torch's generator
    (uniform values below 1 - p are kept), as torch's native_dropout."""
    if train is False:
        return x, fd.ops.full(fd.ops.shape(x), True, DataType.Bool)
    keep = 1.0 - p
    draws = fd.ops.uniform(0.0, 1.0, fd.ops.shape(x), dtype=DataType.Float)
    mask = fd.ops.lt(draws, keep)
    scale = 0.0 if keep == 0 else 1.0 / keep
    return fd.ops.mul(fd.ops.mul(x, mask), scale), mask


def _bernoulli(fd, x, p=0.5, *, generator=None):
    """torch.bernoulli(x, p): ones where a uniform draw from torch's
    generator is below p, in x's shape and dtype (support.py refuses an
    explicit generator)."""
    draws = fd.ops.uniform(0.0, 1.0, fd.ops.shape(x), dtype=DataType.Float)
    return fd.ops.cast(fd.ops.lt(draws, p), x.dtype)


def _empty(fd, size, *args, dtype=None, **_ignored):
    """Uninitialized memory (empty, empty_permuted): zeros are as good as
    any values; the layout follows from the meta value's strides."""
    return _full(fd, size, 0, dtype=dtype)


def _table():
    table = {}
    for name in UNARY:
        table[getattr(aten, name).default] = _unary(name)
    for name, op in BINARY.items():
        packet = getattr(aten, name)
        for overload in ("Tensor", "Scalar", "default"):
            if hasattr(packet, overload):
                table[getattr(packet, overload)] = _binary(op)
    table.update(
        {
            aten.add.Tensor: _add,
            aten.add.Scalar: _add,
            aten.sub.Tensor: _sub,
            aten.sub.Scalar: _sub,
            aten.rsub.Scalar: _rsub,
            aten.rsub.Tensor: _rsub,
            aten.div.Tensor: _div_mode,
            aten.div.Scalar: _div_mode,
            aten.div.Tensor_mode: _div_mode,
            aten.pow.Tensor_Scalar: _binary("pow"),
            aten.pow.Tensor_Tensor: _binary("pow"),
            aten.pow.Scalar: _binary("pow"),
            aten.clamp.default: _clamp,
            aten.clamp_min.default: lambda fd, x, m: fd.ops.maximum(x, m),
            aten.clamp_max.default: lambda fd, x, m: fd.ops.minimum(x, m),
            aten.where.self: lambda fd, condition, a, b: fd.ops.where(condition, a, b),
            aten.sum.dim_IntList: _reduction("sum"),
            aten.sum.default: _sum_all,
            aten.mean.dim: _reduction("mean"),
            aten.amax.default: _reduction("max"),
            aten.amin.default: _reduction("min"),
            aten.var.correction: _var,
            aten.var_mean.correction: _var_mean,
            aten._to_copy.default: _cast,
            prims.convert_element_type.default: _cast,
            aten.clone.default: _clone,
            aten.alias.default: _clone,
            aten.view.default: _reshape,
            aten._unsafe_view.default: _reshape,
            aten.reshape.default: _reshape,
            aten.permute.default: lambda fd, x, dims: fd.ops.permute(x, [d % x.ndim for d in dims]),
            aten.transpose.int: _transpose,
            aten.t.default: _t,
            aten.unsqueeze.default: _unsqueeze,
            aten.squeeze.dim: _squeeze,
            aten.squeeze.dims: _squeeze,
            aten.squeeze.default: _squeeze,
            aten.expand.default: _expand,
            aten.slice.Tensor: _slice,
            aten.cat.default: _cat,
            aten.full.default: _full,
            aten.scalar_tensor.default: _scalar_tensor,
            aten.index_select.default: _index_select,
            aten.gather.default: _gather,
            aten.copy.default: _copy,
            aten.copy_.default: _copy,
            aten.lift_fresh_copy.default: _clone,
            aten.full_like.default: _full_like,
            aten.arange.default: _arange,
            aten.arange.start: _arange,
            aten.arange.start_step: _arange,
            aten.any.default: _any,
            aten.any.dim: _any,
            aten.any.dims: _any,
            aten.cumsum.default: _cumsum,
            aten.constant_pad_nd.default: _constant_pad_nd,
            aten.split_with_sizes.default: _split_with_sizes,
            aten.split.Tensor: _split,
            aten.select.int: _select,
            aten.native_dropout.default: _native_dropout,
            aten.bernoulli.p: _bernoulli,
            aten.empty.memory_format: _empty,
            aten.empty_permuted.default: _empty,
            operator.getitem: _getitem,
        }
    )
    table.update(INDEXING)
    return table


TRANSLATIONS = _table()

# Ops whose translation takes sizes from FX's meta values: `sizes`, those
# of the node's first argument, and `out_sizes`, those of its value, both
# static (support.py refuses symbolic ones); `operand_sizes`, those of each
# tensor in its first argument (a list), as they are; `expanded_axes`, the
# axes along which the first argument is expanded (stride 0, size > 1).
NEEDS_SIZES = {
    aten.cat.default: ("operand_sizes",),
    aten.squeeze.dim: ("sizes",),
    aten.squeeze.dims: ("sizes",),
    aten.squeeze.default: ("sizes",),
    aten.slice.Tensor: ("sizes",),
    aten.copy.default: ("sizes",),
    aten.copy_.default: ("sizes",),
    aten.full_like.default: ("sizes",),
    aten.arange.default: ("out_sizes",),
    aten.arange.start: ("out_sizes",),
    aten.arange.start_step: ("out_sizes",),
    aten.split_with_sizes.default: ("sizes",),
    aten.split.Tensor: ("sizes",),
    aten.select.int: ("sizes",),
    aten.index.Tensor: ("sizes", "out_sizes"),
    aten._unsafe_index.Tensor: ("sizes", "out_sizes"),
    aten.index_put.default: ("sizes",),
    aten._unsafe_index_put.default: ("sizes",),
    aten.slice_scatter.default: ("sizes",),
    aten.as_strided_scatter.default: ("sizes",),
    aten.clone.default: ("expanded_axes",),
}


def static_sizes(node, which):
    """The sizes `which` (of NEEDS_SIZES) for `node`, as FX's meta values
    give them (ints, or SymInts where symbolic)."""
    if which == "operand_sizes":
        return [list(operand.meta["val"].shape) for operand in node.args[0]]
    if which == "expanded_axes":
        operand = node.args[0].meta["val"]
        return [
            axis
            for axis, (size, stride) in enumerate(zip(operand.shape, operand.stride()))
            if isinstance(size, int) and isinstance(stride, int) and stride == 0 and size != 1
        ]
    meta = node.meta["val"] if which == "out_sizes" else node.args[0].meta["val"]
    if isinstance(meta, (tuple, list)):
        meta = meta[0]
    return list(meta.shape)


def translate_node(fd, node, args, kwargs):
    """The nvfuse value of FX node `node`, its arguments already
    translated (`args`, `kwargs`)."""
    for which in NEEDS_SIZES.get(node.target, ()):
        kwargs = dict(kwargs, **{which: static_sizes(node, which)})
    return TRANSLATIONS[node.target](fd, *args, **kwargs)


# Overloads that only relabel memory: never worth a fusion of their own,
# and left outside a fusion at its edges (the partitioner's non-compute
# ops).
VIEWS = [
    aten.view.default,
    aten._unsafe_view.default,
    aten.reshape.default,
    aten.permute.default,
    aten.transpose.int,
    aten.t.default,
    aten.unsqueeze.default,
    aten.squeeze.dim,
    aten.squeeze.dims,
    aten.squeeze.default,
    aten.expand.default,
    aten.alias.default,
    aten.slice.Tensor,
    operator.getitem,
]
