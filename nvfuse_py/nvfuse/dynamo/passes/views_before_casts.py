"""Moves a view above the cast it reads: view(cast(x)) becomes
cast(view(x)).

A view inside a region cuts nvfuse's fusion there (a reshape's output is
materialized for the ops after it), so in `view(logits.float(), [-1, V])`
ahead of a loss, the upcast logits were written in full before the loss
read them back. The view of the input costs nothing, and the cast then
fuses with the loss's reductions. Only casts read by nothing but the view
move (another reader would need the cast at its own shape), and only casts
of values a region does not compute: a graph input or an ATen op's result,
through views. A value a region computes would be reshaped inside it: a
layer norm's float32 output viewed as [tokens, width] ahead of its bf16
cast for the next GEMM cut its region into the norm's kernel, the
reshape, and a kernel for the cast alone. Left in place, the cast ends the
norm's kernel and the view is one of the region's output."""

import torch

from .graph_edits import (
    apply_before_cast,
    RESHAPING_VIEWS,
    computed_in_a_region,
    finish_rewrite,
    is_plain_cast,
)


def move_views_before_casts(gm):
    """Rewrites `gm`'s view(cast(x)) as cast(view(x)); returns how many."""
    moved = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target not in RESHAPING_VIEWS:
            continue
        cast = node.args[0]
        if not isinstance(cast, torch.fx.Node) or not is_plain_cast(cast):
            continue
        if len(cast.users) != 1:
            continue
        if not all(isinstance(size, int) for size in node.args[1]):
            continue  # symbolic sizes: the view stays where Dynamo put it
        x = cast.args[0]
        if computed_in_a_region(x):
            continue
        apply_before_cast(gm.graph, node)
        moved += 1
    return finish_rewrite(gm, moved)
