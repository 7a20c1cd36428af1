"""Rewrites the sum, along its axis, of a one-hot tensor times a factor
that does not vary along that axis, as the one number it is.

Cross-entropy's backward is `g - exp(log_p) * sum(g, 1)` with
`g = onehot(label) * w` (w: the loss's gradient over the number of
counted tokens, [tokens, 1]). After `one_hot_scatters`, the one-hot is
`where(arange(V) == label, value, 0)`; its row sum over the vocabulary is
`value * w` (a scatter's index is in range, or torch reports it: each row
holds the value once). Summed as written, the backward is a reduction over every
row of [tokens, vocabulary] (a kernel that holds the row while it sums);
rewritten, it is pointwise, and the gradient streams through one
pointwise kernel that reads the logits once and writes the result once.

Torch's sum adds the row's zeros too: `0 * w` is NaN where `w` is
infinite or NaN, so the rewrite adds `w * 0` (the fill times `w`) when
the axis has more than one element, and the result equals torch's
bit for bit (one nonzero term and zeros sum exactly). Only the one-hots
one_hot_scatters made, with fill 0, are rewritten."""

import numbers

import torch

from .graph_edits import finish_rewrite, insert_call, meta_of
from .one_hot_scatters import ONE_HOT_AXIS

aten = torch.ops.aten

# What this pass inserts, and the product it may leave unread.
_ERASABLE = {aten.mul.Tensor, aten.add.Tensor, aten.expand.default, aten.squeeze.dims}


def _number_of(value):
    """The number a 0-d `scalar_tensor` node (or a Python number) holds, or None."""
    if isinstance(value, numbers.Number):
        return value
    if (
        isinstance(value, torch.fx.Node)
        and value.op == "call_function"
        and value.target is aten.scalar_tensor.default
        and isinstance(value.args[0], numbers.Number)
    ):
        return value.args[0]
    return None


def _one_hot_axis(node):
    """(axis, value, fill) of a one-hot `where` that one_hot_scatters made
    of a scatter with fill 0, or None. Only those: an index compared with
    an arange elsewhere may be out of range, which leaves a row of zeros."""
    if not isinstance(node, torch.fx.Node) or ONE_HOT_AXIS not in node.meta:
        return None
    _, chosen, fill = node.args
    if _number_of(fill) != 0:
        return None
    return node.meta[ONE_HOT_AXIS], chosen, fill


def _constant_along(factor, axis, rank):
    """Whether the meta value of `factor` is broadcast along `axis` of a
    rank-`rank` result."""
    meta = meta_of(factor)
    if meta is None:
        return isinstance(factor, numbers.Number)
    offset = axis - (rank - meta.dim())
    return offset < 0 or meta.shape[offset] == 1


def _summed_one_hot(node):
    """(one-hot factor's value and fill, the other factor or None, axis) of
    a sum this pass rewrites, or None."""
    if node.op != "call_function" or node.target is not aten.sum.dim_IntList:
        return None
    if node.kwargs.get("dtype") is not None:
        return None
    summed, dims = node.args[0], node.args[1]
    meta = meta_of(summed)
    if meta is None or dims is None or len(dims) != 1:
        return None
    axis = dims[0] % meta.dim()
    found = _one_hot_axis(summed)
    if found is not None and found[0] == axis:
        return found[1], found[2], None, axis
    if summed.target is not aten.mul.Tensor:
        return None
    for hot, other in (summed.args, reversed(summed.args)):
        found = _one_hot_axis(hot)
        if found is not None and found[0] == axis and _constant_along(other, axis, meta.dim()):
            return found[1], found[2], other, axis
    return None


def _row_value(graph, node, chosen, fill, factor, axis):
    """value * factor (+ fill * factor when the axis has more than one
    element), expanded to the sum's sizes."""
    summed = node.args[0]
    keepdim = len(node.args) > 2 and node.args[2] or node.kwargs.get("keepdim", False)
    if factor is None:
        value = chosen
    else:
        value = insert_call(graph, node, aten.mul.Tensor, (factor, chosen))
        if meta_of(summed).shape[axis] > 1:
            zeros = insert_call(graph, node, aten.mul.Tensor, (factor, fill))
            value = insert_call(graph, node, aten.add.Tensor, (value, zeros))
    kept_shape = list(meta_of(summed).shape)
    kept_shape[axis] = 1
    if list(meta_of(value).shape) != kept_shape:
        value = insert_call(graph, node, aten.expand.default, (value, kept_shape))
    if not keepdim:
        value = insert_call(graph, node, aten.squeeze.dims, (value, [axis]))
    return value


def rewrite_one_hot_sums(gm):
    """Rewrites `gm`'s sums of one-hot products (see the module's doc);
    returns how many it rewrote."""
    rewritten = 0
    for node in list(gm.graph.nodes):
        found = _summed_one_hot(node)
        if found is None:
            continue
        chosen, fill, factor, axis = found
        summed = node.args[0]
        value = _row_value(gm.graph, node, chosen, fill, factor, axis)
        if meta_of(value).dtype != meta_of(node).dtype:
            _erase_unused(gm.graph, value)
            continue
        node.replace_all_uses_with(value)
        gm.graph.erase_node(node)
        _erase_unused(gm.graph, summed)
        rewritten += 1
    return finish_rewrite(gm, rewritten)


def _erase_unused(graph, node):
    """Erases `node`, arithmetic or a view no node reads, and then its
    operands that no other node reads."""
    if node.users or node.op != "call_function" or node.target not in _ERASABLE:
        return
    operands = node.all_input_nodes
    graph.erase_node(node)
    for operand in operands:
        _erase_unused(graph, operand)
