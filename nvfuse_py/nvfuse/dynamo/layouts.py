"""Layouts where a region meets the rest of the graph.

Inputs: each region input is defined with the layout of the tensor it is
given (dtypes, size-1 axes, contiguity and stride order), the sizes Dynamo
fixed kept fixed.

Outputs: torch's meta computation promised every node's sizes and strides
(`node.meta["val"]`), and the ATen calls after a region rely on them: a
`view` needs strides it can merge, the attention backward reads a
gradient laid out as the forward's output was. So every region output is
asked for in the stride order of its meta value, and an output nvfuse
still lays out otherwise (an expanded broadcast kept at stride 0 where
torch materialized it, say) is copied into that layout before anyone
reads it (`OutputLayout.conform`). The check runs on a region's first
call per input signature; later calls only copy the outputs it flagged."""

import torch

from .. import _C


def static_sizes_of(meta):
    """Per axis, the size Dynamo fixed for this graph (an int), or None
    where its size is symbolic; None for a non-tensor."""
    if not isinstance(meta, torch.Tensor):
        return None
    return tuple(s if isinstance(s, int) else None for s in meta.shape)


def input_layout(value, static):
    """(shape, contiguity, stride_order) to define `value` with: the sizes
    Dynamo fixed stay fixed (the segmenter then knows, say, that two
    reductions have different widths), the others symbolic; broadcast and
    expanded axes as the tensor has them."""
    shape, contiguity, order = _C.describe_tensor(list(value.shape), list(value.stride()))
    if static is not None:
        shape = [
            fixed if fixed is not None and described == -1 and stride != 0 else described
            for fixed, described, stride in zip(static, shape, value.stride())
        ]
    return list(shape), list(contiguity), list(order)


def layout_key(value, layout):
    """What of an input's layout changes the definition."""
    if layout is None:
        return type(value)
    shape, contiguity, order = layout
    return (
        value.dtype,
        value.device.type,
        value.dim() == 0 and value.is_cpu,
        tuple(shape),
        tuple(contiguity),
        tuple(order),
    )


def _hints(values):
    from torch.fx.experimental.symbolic_shapes import size_hint

    return [size_hint(v) for v in values]


def stride_order_of(meta):
    """The stride order (rank of each axis's stride, 0 = fastest) of torch's
    meta value `meta`, row-major included; None for a non-tensor or a
    0-d tensor. Ties (size-1 and stride-0 axes) are broken as
    describe_tensor breaks them for inputs."""
    if not isinstance(meta, torch.Tensor) or meta.dim() == 0:
        return None
    _, _, order = _C.describe_tensor(_hints(meta.shape), _hints(meta.stride()))
    return list(order) if order else list(range(meta.dim() - 1, -1, -1))


def _is_dense_in_order(sizes, strides, order):
    """Whether a tensor of `sizes` and `strides` is dense with its axes in
    `order` (size-1 axes may have any stride: no view depends on it)."""
    expected = 1
    for axis in sorted(range(len(sizes)), key=lambda a: order[a]):
        if sizes[axis] == 1:
            continue
        if strides[axis] != expected:
            return False
        expected *= sizes[axis]
    return True


class OutputLayout:
    """What torch promised of one region output: its stride order, and its
    exact strides where they are static."""

    def __init__(self, meta):
        self.order = stride_order_of(meta)
        strides = tuple(meta.stride()) if self.order is not None else ()
        self.strides = strides if all(isinstance(s, int) for s in strides) else None

    def accepts(self, value):
        """Whether `value` can stand for the meta value: its strides, or a
        dense layout in its stride order (every view and kernel that works
        on the one works on the other)."""
        if self.order is None or not isinstance(value, torch.Tensor) or value.numel() == 0:
            return True
        if self.strides is not None and tuple(value.stride()) == self.strides:
            return True
        return _is_dense_in_order(value.shape, value.stride(), self.order)

    def conform(self, value):
        """`value` copied into a dense tensor in the promised stride order
        (its own, where nothing was promised)."""
        if self.order is None:
            return value.clone()
        outer_to_inner = sorted(range(value.dim()), key=lambda a: -self.order[a])
        out = torch.empty_permuted(
            value.shape, outer_to_inner, dtype=value.dtype, device=value.device
        )
        return out.copy_(value)
