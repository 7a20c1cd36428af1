"""`reciprocal(sqrt(x))` becomes `rsqrt(x)` where nothing else reads the
square root.

Torch's batch-norm decomposition in inference computes the inverse
standard deviation as `1 / sqrt(running_var + eps)`. Each op, correctly
rounded, is a hardware approximation, a Newton step and a branch around a
slow path for special values, about 16 issue slots an element; a
channels-last batch norm computes it once per element (its lanes are
channels), and ResNet-50's batch-norm kernels were issue-bound on it.
`rsqrt` is one MUFU instruction within 2 ulp of the exact value (CUDA's
rsqrtf, torch.rsqrt's), and the same for zero, infinity, negative
numbers and NaN. Inductor's kernels approximate both ops too."""

import torch

from .graph_edits import finish_rewrite, insert_call

aten = torch.ops.aten


def _square_root_read_once(node):
    root = node.args[0]
    return (
        isinstance(root, torch.fx.Node)
        and root.op == "call_function"
        and root.target == aten.sqrt.default
        and len(root.users) == 1
    )


def fold_reciprocal_square_roots(gm):
    """Rewrites `gm`'s reciprocal(sqrt(x)) as rsqrt(x); returns how many."""
    folded = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target != aten.reciprocal.default:
            continue
        if not _square_root_read_once(node):
            continue
        root = node.args[0]
        rsqrt = insert_call(gm.graph, node, aten.rsqrt.default, (root.args[0],))
        node.replace_all_uses_with(rsqrt)
        gm.graph.erase_node(node)
        gm.graph.erase_node(root)
        folded += 1
    return finish_rewrite(gm, folded)
