"""Moves a reshape below the elementwise op that reads it: op(view(x), y)
becomes view(op(x, view(y))), y being of the op's own sizes.

A reshape inside a region cuts nvfuse's fusion there, so the op after it
is a kernel of its own that reads what the kernel before it wrote. In a
language model's backward, the cross-entropy gradient over [tokens,
vocabulary] is reshaped to [batch, sequence, vocabulary] and added to the
logits' own gradient: the add read and wrote the whole [tokens, vocabulary]
tensor once more. Moved below the add, the reshape of the other operand
(a region input: a zero-copy view) and of the result (an output: a view
too) cost nothing, and the add joins the gradient's kernel.

A plain cast that only the graph's output reads moves the same way,
cast(view(x)) becoming view(cast(x)), when x is computed (not a graph
input, whose view views_before_casts moved above the cast so that the
region reads it in place): the cross-entropy gradient, computed over
[tokens, vocabulary] in float32, is reshaped and then cast back to the
logits' dtype as the region's output. With the reshape inside, the
region's kernel mapped every element through the reshape; below the cast
the reshape is the output's zero-copy view.

Only ops whose tensor operands all have the op's sizes move (a broadcast
operand would need its own reshape rule), only views read by nothing
else (another reader would need the view anyway), and only views of values
a region computes. A view of a region's input is a host view where it is;
moved, it became a reshape of the op's result inside the region: Llama's
residual add of the attention's output projection, viewed from [tokens,
width] to [batch, sequence, width], was a kernel of its own ahead of the
RMS norm that reads its result."""

import torch

from .graph_edits import (
    ARITHMETIC,
    RESHAPING_VIEWS,
    computed_in_a_region,
    finish_rewrite,
    insert_call,
    is_plain_cast,
    meta_of,
)

aten = torch.ops.aten


def _static_shape(value):
    meta = meta_of(value)
    if not isinstance(meta, torch.Tensor):
        return None
    shape = tuple(meta.shape)
    return shape if all(isinstance(s, int) for s in shape) else None


def _movable_view(node):
    """The operand position of a view `node` reads that can move below it,
    or None."""
    if is_plain_cast(node):
        outputs_only = all(user.op == "output" for user in node.users)
        return 0 if outputs_only and _is_view_of_computed(node.args[0]) else None
    if node.op != "call_function" or node.target not in ARITHMETIC or node.kwargs:
        return None
    shape = _static_shape(node)
    if shape is None:
        return None
    position = None
    for k, arg in enumerate(node.args):
        if not isinstance(arg, torch.fx.Node):
            continue  # a number reads the same at any shape
        if _static_shape(arg) != shape:
            return None
        if position is None and arg.target in RESHAPING_VIEWS and len(arg.users) == 1:
            source = _static_shape(arg.args[0])
            if source is not None and source != shape and computed_in_a_region(arg.args[0]):
                position = k
    return position


def _is_view_of_computed(node):
    """Whether `node` is a reshape, read only once, of a value an op
    computed (not a graph input)."""
    if node.op != "call_function" or node.target not in RESHAPING_VIEWS or len(node.users) != 1:
        return False
    source = node.args[0]
    return (
        source.op == "call_function"
        and source.target not in RESHAPING_VIEWS
        and _static_shape(source) is not None
        and _static_shape(node) is not None
    )


def move_views_after_pointwise(gm):
    """Rewrites `gm`'s op(view(x), y) as view(op(x, view(y))) (see the
    module's doc); returns how many views moved."""
    moved = 0
    for node in list(gm.graph.nodes):
        position = _movable_view(node)
        if position is None:
            continue
        view = node.args[position]
        x = view.args[0]
        source = list(_static_shape(x))
        args = [
            x
            if k == position
            else insert_call(gm.graph, node, aten.reshape.default, (arg, source))
            if isinstance(arg, torch.fx.Node)
            else arg
            for k, arg in enumerate(node.args)
        ]
        result = insert_call(gm.graph, node, node.target, tuple(args), node.kwargs)
        reshaped = insert_call(
            gm.graph, node, aten.reshape.default, (result, list(_static_shape(node)))
        )
        node.replace_all_uses_with(reshaped)
        gm.graph.erase_node(node)
        gm.graph.erase_node(view)
        moved += 1
    return finish_rewrite(gm, moved)
