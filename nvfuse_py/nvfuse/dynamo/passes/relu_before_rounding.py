"""`relu(cast(x))` becomes `cast(relu(x))` where the cast narrows one
floating-point type to another (float32 to bf16: a batch norm's result
ahead of its ReLU) and only the relu reads it.

Exact on CUDA: rounding to nearest keeps a value's sign and never makes
a non-negative value negative, and CUDA's relu (torch's and nvfuse's)
takes -0.0 to +0.0, so rounding then clamping gives the bits of clamping
then rounding (a tiny negative that rounds to -0.0 included, and NaN).
Torch's CPU relu keeps -0.0, so there the orders differ in the sign of
such a zero: the pass leaves graphs on other devices alone. The kernels
then apply relu to the float (a compare and a select) rather than to the
rounded half-type bits (four instructions a lane). Nothing moves where
the cast is read elsewhere, which would then need both."""

import torch

from .graph_edits import apply_before_cast, finish_rewrite, is_plain_cast, meta_of

aten = torch.ops.aten


def _narrowing_float_cast(node):
    """Whether `node` is a cast on CUDA, read only by one node, from a
    floating type to a narrower floating type."""
    if not isinstance(node, torch.fx.Node) or not is_plain_cast(node) or len(node.users) != 1:
        return False
    source, result = meta_of(node.args[0]), meta_of(node)
    if source is None or result is None or result.device.type != "cuda":
        return False
    return (
        source.dtype.is_floating_point
        and result.dtype.is_floating_point
        and result.dtype.itemsize < source.dtype.itemsize
    )


def move_relus_before_roundings(gm):
    """Rewrites `gm`'s relu(narrowing cast(x)) as the cast of relu(x);
    returns how many."""
    moved = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target != aten.relu.default:
            continue
        cast = node.args[0]
        if not _narrowing_float_cast(cast):
            continue
        apply_before_cast(gm.graph, node)
        moved += 1
    return finish_rewrite(gm, moved)
