"""`reciprocal(exp(-x) + 1)` becomes `sigmoid(x)` where nothing else reads
its intermediates.

Torch's decomposition of silu's backward spells the sigmoid out as
`1 / (1 + exp(-x))`: a correctly rounded reciprocal per element, a
Newton step and a branch around a slow path, which made SwiGLU's
backward kernel issue-bound (17 slow-path calls in 912 SASS
instructions for 8 elements). As `sigmoid` it takes the kernels'
sigmoid (the same expf, an approximate division within 2 ulp), and the
kernel computes one sigmoid where the forward's recomputed silu already
takes it."""

import torch

from .graph_edits import finish_rewrite, insert_call

aten = torch.ops.aten


def _call_of(value, target):
    """`value` when it is a call of `target` that one node reads, else None."""
    if (
        isinstance(value, torch.fx.Node)
        and value.op == "call_function"
        and value.target == target
        and len(value.users) == 1
    ):
        return value
    return None


def _plus_one(node):
    """The other operand of `node` when it is `t + 1` or `1 + t` (alpha 1)."""
    if node.kwargs.get("alpha", 1) != 1 or len(node.args) != 2:
        return None
    a, b = node.args
    if b == 1:
        return a
    if a == 1:
        return b
    return None


def _sigmoid_argument(reciprocal):
    """x where `reciprocal` computes 1 / (exp(-x) + 1) from calls no other
    node reads, else None."""
    total = _call_of(reciprocal.args[0], aten.add.Tensor)
    exp = _call_of(_plus_one(total), aten.exp.default) if total is not None else None
    negation = _call_of(exp.args[0], aten.neg.default) if exp is not None else None
    return negation.args[0] if negation is not None else None


def fold_sigmoids(gm):
    """Rewrites `gm`'s reciprocal(exp(-x) + 1) as sigmoid(x); returns how
    many."""
    folded = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target != aten.reciprocal.default:
            continue
        x = _sigmoid_argument(node)
        if x is None:
            continue
        total = node.args[0]
        exp = _plus_one(total)
        negation = exp.args[0]
        node.replace_all_uses_with(insert_call(gm.graph, node, aten.sigmoid.default, (x,)))
        for dead in (node, total, exp, negation):
            gm.graph.erase_node(dead)
        folded += 1
    return finish_rewrite(gm, folded)
