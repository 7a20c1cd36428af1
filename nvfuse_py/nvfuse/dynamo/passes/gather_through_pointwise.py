"""Moves a gather below the pointwise ops it reads: gathering the
elements of f(x, rows) is f of the gathered elements of x.

Cross-entropy decomposes to `gather(log_softmax(logits.float()), label)`:
the gather reads one element a row of a [tokens, vocabulary] value that
only exists once the row's max and sum are known, so nvfuse materialized
the upcast logits (a full fp32 copy, written and read again) for it. Moved
through the pointwise ops, the gather reads the logits themselves, and
the full-size work left is the row reductions:

    gather(sub(sub(float(view(x)), max), log(sum)), 1, label)
      = sub(sub(float(view(gather(x, -1, label'))), max), log(sum))

An operand of the same sizes as the gathered value is gathered in turn;
one of size 1 along the gathered axis (a row statistic) or a number is
read as it is. A view that only reshapes the axes before a last gathered
axis is moved through too, with the index reshaped alike. Anything else
stops the move, which then gathers where it stopped."""

import torch

from .graph_edits import (
    ARITHMETIC,
    RESHAPING_VIEWS,
    finish_rewrite,
    insert_call,
    is_plain_cast,
    meta_of,
)

aten = torch.ops.aten

_POINTWISE = ARITHMETIC | {
    aten.neg.default,
    aten.exp.default,
    aten.log.default,
    aten.where.self,
    aten._to_copy.default,
    torch.ops.prims.convert_element_type.default,
}


def _gather_through(graph, anchor, src, dim, index):
    """A node computing gather(src, dim, index) that reads src's pointwise
    inputs only at the gathered elements, or None when src is not a
    pointwise op or view this pass moves through."""
    meta = meta_of(src)
    if src.op != "call_function" or not isinstance(meta, torch.Tensor):
        return None
    if src.target in RESHAPING_VIEWS:
        return _through_view(graph, anchor, src, dim, index)
    if src.target not in _POINTWISE:
        return None
    if src.target is aten._to_copy.default and not is_plain_cast(src):
        return None  # a device or layout change, not a cast
    roles = [_operand_role(arg, meta, dim) for arg in src.args]
    if None in roles:
        return None
    args = []
    for arg, role in zip(src.args, roles):
        if role == "gathered":
            moved = _gather_through(graph, anchor, arg, dim, index)
            arg = moved or insert_call(graph, anchor, aten.gather.default, (arg, dim, index))
        args.append(arg)
    return insert_call(graph, anchor, src.target, tuple(args), dict(src.kwargs))


def _operand_role(arg, meta, dim):
    """How an operand of a pointwise value of meta `meta` is read at the
    gathered elements: "gathered" (it has the value's sizes), "as is" (a
    number, a 0-d tensor, or size 1 along the gathered axis), or None
    (some other broadcast, which this pass leaves alone)."""
    arg_meta = meta_of(arg)
    if not isinstance(arg_meta, torch.Tensor) or arg_meta.dim() == 0:
        return "as is"
    if tuple(arg_meta.shape) == tuple(meta.shape):
        return "gathered"
    if arg_meta.dim() == meta.dim() and arg_meta.shape[dim] == 1:
        return "as is"
    return None


def _through_view(graph, anchor, view, dim, index):
    """gather(view(x), last, index) as view(gather(x, last, index')) when
    the view only reshapes the axes before the last, gathered one."""
    x = view.args[0]
    meta, x_meta = meta_of(view), meta_of(x)
    if not isinstance(x_meta, torch.Tensor) or x_meta.dim() == 0:
        return None
    last = meta.dim() - 1
    if dim != last or x_meta.shape[-1] != meta.shape[-1]:
        return None
    index_meta = meta_of(index)
    new_index_shape = [*x_meta.shape[:-1], index_meta.shape[-1]]
    index = insert_call(graph, anchor, aten.view.default, (index, new_index_shape))
    x_last = x_meta.dim() - 1
    gathered = _gather_through(graph, anchor, x, x_last, index)
    gathered = gathered or insert_call(graph, anchor, aten.gather.default, (x, x_last, index))
    return insert_call(graph, anchor, aten.view.default, (gathered, list(index_meta.shape)))


def _movable(node):
    """Whether `node` is a gather whose index has the gathered value's
    sizes on every other axis (so the value's operands line up with it)."""
    if node.op != "call_function" or node.target is not aten.gather.default:
        return False
    if node.kwargs.get("sparse_grad") or len(node.args) > 3 and node.args[3]:
        return False
    src, dim, index = node.args[:3]
    meta, index_meta = meta_of(src), meta_of(index)
    if not isinstance(meta, torch.Tensor) or not isinstance(index_meta, torch.Tensor):
        return False
    if not all(isinstance(s, int) for s in (*meta.shape, *index_meta.shape)):
        return False
    dim %= meta.dim()
    others = [d for d in range(meta.dim()) if d != dim]
    return index_meta.dim() == meta.dim() and all(
        index_meta.shape[d] == meta.shape[d] for d in others
    )


def _erase_if_dead(graph, node, seen):
    if node in seen or node.op != "call_function" or node.users:
        return
    if node.target not in _POINTWISE and node.target not in RESHAPING_VIEWS:
        return
    seen.add(node)
    inputs = node.all_input_nodes
    graph.erase_node(node)
    for arg in inputs:
        _erase_if_dead(graph, arg, seen)


def push_gathers_through_pointwise(gm):
    """Moves `gm`'s gathers below the pointwise ops they read (see the
    module's doc); returns how many it moved."""
    moved = 0
    for node in list(gm.graph.nodes):
        if not _movable(node):
            continue
        src, dim, index = node.args[:3]
        new = _gather_through(gm.graph, node, src, dim % meta_of(src).dim(), index)
        if new is None:
            continue
        node.replace_all_uses_with(new)
        gm.graph.erase_node(node)
        _erase_if_dead(gm.graph, src, set())
        moved += 1
    return finish_rewrite(gm, moved)
