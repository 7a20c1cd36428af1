"""Operands without elements leave the ops that would copy nothing of
them: `cat` drops them, and `slice_scatter` of an empty source becomes a
copy of its base.

Phi-3's rotary embedding rotates the whole head (its partial rotary
factor is 1) and still concatenates the rotated part with the rest,
`q[..., head_dim:]`, a slice of size 0; the backward scatters that empty
gradient into zeros. A region that reads a tensor without elements runs
on the ATen reference evaluator (the runtime's rule for empty inputs), so
each layer's rotary embedding, forward and backward, ran op by op. The
graph's sizes are static here, so the empty operands are known at compile
time and can go, and the slice that made them with them.

A rewrite is kept only where the new op's meta value has the old one's
sizes, strides and dtype (cat promotes over all its operands, empty ones
included), so that no later node sees a different tensor."""

import torch

from .graph_edits import call_meta, finish_rewrite, insert_call, meta_of, same_tensor_layout

aten = torch.ops.aten


def _is_empty(value):
    meta = meta_of(value)
    return isinstance(meta, torch.Tensor) and meta.numel() == 0


def _replacement(node):
    """(target, args, kwargs) of the call standing for `node` (a cat with
    empty operands, or a slice_scatter of an empty source), or None."""
    if node.target == aten.cat.default:
        operands = node.args[0]
        kept = [x for x in operands if not _is_empty(x)]
        if not kept or len(kept) == len(operands):
            return None
        return aten.cat.default, (kept, *node.args[1:]), dict(node.kwargs)
    if node.target == aten.slice_scatter.default and _is_empty(node.args[1]):
        return aten.clone.default, (node.args[0],), {}
    return None


def drop_empty_operands(gm):
    """Rewrites `gm`'s cats of empty operands and scatters of empty
    sources (see the module's docstring); returns how many."""
    rewritten = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or _is_empty(node):
            continue
        call = _replacement(node)
        if call is None or not same_tensor_layout(call_meta(*call), meta_of(node)):
            continue
        node.replace_all_uses_with(insert_call(gm.graph, node, *call))
        gm.graph.erase_node(node)
        rewritten += 1
    if rewritten:
        gm.graph.eliminate_dead_code()
    return finish_rewrite(gm, rewritten)
