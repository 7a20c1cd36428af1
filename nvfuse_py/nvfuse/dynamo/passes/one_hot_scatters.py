"""Rewrites a scatter of one number into a filled tensor, one index per
row, as the comparison it is: element j of a row is the number where j is
the row's index, else the fill.

Cross-entropy's backward decomposes to `scatter(full_like(x, 0), 1,
label, -1.0)`: a one-hot [tokens, vocabulary] tensor that nvfuse wrote
twice (the fill, then the scatter: each a kernel of its own, a scatter
writing into a copy of its input) before the kernel that reads it. As

    where(arange(V).view(1, V) == label, -1.0, 0)

it is pointwise work on the label alone, computed inside the reduction
kernel that reads it: the backward reads the logits once and writes the
gradient once.

Only scatters that write one element per row (the index has size 1 along
the scattered axis and the filled tensor's sizes elsewhere) are rewritten;
an index out of range, which torch reports, writes nothing here."""

import numbers

import torch

from .graph_edits import finish_rewrite, insert_call, meta_of

aten = torch.ops.aten

_FILLS = {aten.full_like.default: 1, aten.full.default: 1}

# The meta key of the `where` a scatter became: the axis it is one-hot
# along. Its index was a scatter's, so torch checked that every index is in
# range: each row holds the number exactly once (one_hot_sums relies on it).
ONE_HOT_AXIS = "nvfuse_one_hot_axis"


def _fill_value(node):
    """The number `node` fills a tensor with, or None."""
    if node.op != "call_function" or node.target not in _FILLS:
        return None
    value = node.args[_FILLS[node.target]]
    return value if isinstance(value, numbers.Number) else None


def _one_hot_scatter(node):
    """(fill, dim, index, value) of a scatter this pass rewrites, or None."""
    if node.op != "call_function" or node.target is not aten.scatter.value:
        return None
    if node.kwargs.get("reduce") is not None:
        return None
    target, dim, index, value = node.args[:4]
    fill = _fill_value(target)
    meta, index_meta = meta_of(target), meta_of(index)
    if fill is None or not isinstance(value, numbers.Number):
        return None
    if not isinstance(meta, torch.Tensor) or not isinstance(index_meta, torch.Tensor):
        return None
    if not all(isinstance(s, int) for s in (*meta.shape, *index_meta.shape)):
        return None
    dim %= max(1, meta.dim())
    if index_meta.dim() != meta.dim() or index_meta.shape[dim] != 1:
        return None
    if any(index_meta.shape[d] != meta.shape[d] for d in range(meta.dim()) if d != dim):
        return None
    return fill, dim, index, value


def _number(graph, anchor, value, like):
    return insert_call(
        graph,
        anchor,
        aten.scalar_tensor.default,
        (value,),
        {"dtype": like.dtype, "device": like.device},
        fake_like=like,
    )


def _as_where(graph, node, fill, dim, index, value):
    meta, index_meta = meta_of(node), meta_of(index)
    extent = meta.shape[dim]
    positions = insert_call(
        graph,
        node,
        aten.arange.default,
        (extent,),
        {"dtype": index_meta.dtype, "device": meta.device},
        fake_like=meta,
    )
    # Size-1 axes around the positions by unsqueezes (broadcasts inside a
    # kernel), not a view (a reshape, which a reduction kernel cannot take).
    for axis in range(meta.dim()):
        if axis != dim:
            positions = insert_call(graph, node, aten.unsqueeze.default, (positions, axis))
    hit = insert_call(graph, node, aten.eq.Tensor, (positions, index))
    chosen = _number(graph, node, value, meta)
    other = _number(graph, node, fill, meta)
    one_hot = insert_call(graph, node, aten.where.self, (hit, chosen, other))
    one_hot.meta[ONE_HOT_AXIS] = dim
    return one_hot


def rewrite_one_hot_scatters(gm):
    """Rewrites `gm`'s one-hot scatters (see the module's doc); returns how
    many it rewrote."""
    rewritten = 0
    for node in list(gm.graph.nodes):
        found = _one_hot_scatter(node)
        if found is None:
            continue
        filled = node.args[0]
        node.replace_all_uses_with(_as_where(gm.graph, node, *found))
        gm.graph.erase_node(node)
        if not filled.users:
            gm.graph.erase_node(filled)
        rewritten += 1
    return finish_rewrite(gm, rewritten)
