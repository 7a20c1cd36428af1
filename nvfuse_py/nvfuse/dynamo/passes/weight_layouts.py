"""Convolution weights made channels-last together, by one kernel launch.

Given a channels-last image and a weight laid out NCHW (as parameters
are), cuDNN's convolution call copies the weight into channels-last
itself (`weight.contiguous(channels_last)`: an ATen copy kernel, and its
allocation and launch on the host). A channels-last ResNet-50 step makes
17 such copies in its forward (every 3x3 and 7x7 convolution) and as many
in its backward; on a step bound by its host, each is a host call of its
own. This pass copies every such weight of the graph into channels-last
with one call (`copy_into_layouts`: one grouped kernel on the GPU) at the
graph's start, and the convolutions read the copies, which cuDNN takes as
they are. The values are the same bits: it is the copy cuDNN made.

Only weights that are graph inputs are taken (parameters, and in a
backward the weights the forward saved), so that the one call can run
before every convolution; 1x1 weights are both layouts and need no copy.

A backward's convolutions over channels-last images compute the weights'
gradients channels-last, and the graph returns them so; autograd then
copies each into its NCHW parameter's layout when it accumulates it
(`clone_obey_contract`), again one ATen copy per weight. Those gradients
are copied back into their weights' layout by one call at the graph's
end instead, which autograd takes as they are.

A graph with fewer than two weights or gradients to copy is left alone
that way: one copy saves nothing."""

import operator

import torch

from ... import _C
from .graph_edits import finish_rewrite, meta_of

aten = torch.ops.aten

# Per convolution op: (the index of its image, the index of its weight).
_IMAGE_AND_WEIGHT = {
    aten.convolution.default: (0, 1),
    aten.convolution_backward.default: (1, 2),
}


def copy_into_layouts(tensors, strides):
    """Fresh copies of `tensors`, each laid out with its (dense) `strides`:
    the graph's call, one kernel launch for the CUDA tensors."""
    return _C.copy_into_layouts(tensors, strides)


def copy_into_padded(tensors, sizes, strides):
    """Fresh copies of `tensors` zero-padded to `sizes` (along one axis
    each), laid out with their dense `strides`: the graph's call, the same
    launch (GEMM operands padded to aligned rows, gemm_alignment.py)."""
    return _C.copy_into_padded(tensors, sizes, strides)


# The graph calls of the grouped copy, whose results are laid out as their
# meta values say.
GROUPED_COPIES = (copy_into_layouts, copy_into_padded)


def group_weight_layouts(gm):
    """Rewrites `gm` as the module says; True when it changed the graph.
    The gradients go first: they are found by their weights' layouts,
    which the weights' copies would hide."""
    gradients = _gradients_to_restore(gm)
    uses = _weight_uses(gm)
    edits = [len(gradients) >= 2, len(uses) >= 2]
    if edits[0]:
        output = gm.graph.output_node()
        copies = copied_together(gm.graph, output, list(gradients), list(gradients.values()))
        returned = {gradient: copy for gradient, copy in zip(gradients, copies)}
        output.args = (torch.fx.node.map_arg(output.args[0], lambda v: returned.get(v, v)),)
    if edits[1]:
        weights = list(uses)
        strides = [_channels_last_strides(meta_of(w)) for w in weights]
        copies = copied_together(gm.graph, _after_inputs(gm.graph), weights, strides)
        for weight, copy in zip(weights, copies):
            for convolution, index in uses[weight]:
                convolution.update_arg(index, copy)
    return finish_rewrite(gm, any(edits))


def copied_together(graph, anchor, values, strides, sizes=None):
    """Nodes, inserted before `anchor`, of the copies of `values` laid out
    with `strides`, made by one copy_into_layouts call; with `sizes`, of
    the copies zero-padded to them, by one copy_into_padded call."""
    with graph.inserting_before(anchor):
        if sizes is None:
            group = graph.call_function(copy_into_layouts, (values, strides))
        else:
            group = graph.call_function(copy_into_padded, (values, sizes, strides))
    shapes = sizes or [meta_of(v).shape for v in values]
    group.meta["val"] = [
        meta_of(v).new_empty_strided(shape, s) for v, shape, s in zip(values, shapes, strides)
    ]
    with graph.inserting_before(anchor):
        copies = [graph.call_function(operator.getitem, (group, k)) for k in range(len(values))]
    for copy, meta in zip(copies, group.meta["val"]):
        copy.meta["val"] = meta
    return copies


def _gradients_to_restore(gm):
    """{returned weight gradient: its weight's strides} of the backward's
    convolutions that compute a channels-last gradient for an NCHW weight."""
    returned = set(gm.graph.output_node().all_input_nodes)
    gradients = {}
    for node in gm.graph.nodes:
        if node.op != "call_function" or node.target is not aten.convolution_backward.default:
            continue
        weight = meta_of(node.args[2])
        for item in node.users:
            if item.target is operator.getitem and item.args[1] == 1 and item in returned:
                gradient = meta_of(item)
                if _is_strictly_channels_last(gradient) and _is_nchw(weight):
                    gradients[item] = list(weight.stride())
    return gradients


def _weight_uses(gm):
    """{weight placeholder: [(convolution, argument index)]} of the
    convolutions that read a channels-last image and an NCHW weight."""
    uses = {}
    for node in gm.graph.nodes:
        if node.op != "call_function" or node.target not in _IMAGE_AND_WEIGHT:
            continue
        image_index, weight_index = _IMAGE_AND_WEIGHT[node.target]
        weight = node.args[weight_index]
        if _is_strictly_channels_last(meta_of(node.args[image_index])) and _wants_copy(weight):
            uses.setdefault(weight, []).append((node, weight_index))
    return uses


def _is_strictly_channels_last(meta):
    """A 4-d tensor laid out channels-last and not also contiguous (where
    both hold, cuDNN runs in the contiguous layout)."""
    return (
        isinstance(meta, torch.Tensor)
        and meta.dim() == 4
        and meta.is_contiguous(memory_format=torch.channels_last)
        and not meta.is_contiguous()
    )


def _wants_copy(weight):
    return (
        isinstance(weight, torch.fx.Node)
        and weight.op == "placeholder"
        and _is_nchw(meta_of(weight))
    )


def _is_nchw(meta):
    """A 4-d tensor of static sizes laid out NCHW and not also
    channels-last."""
    return (
        isinstance(meta, torch.Tensor)
        and meta.dim() == 4
        and all(isinstance(n, int) for n in meta.shape)
        and meta.is_contiguous()
        and not meta.is_contiguous(memory_format=torch.channels_last)
    )


def _channels_last_strides(meta):
    _, channels, height, width = meta.shape
    return [channels * height * width, 1, width * channels, channels]


def _after_inputs(graph):
    """The first node after the graph's inputs."""
    return next(n for n in graph.nodes if n.op != "placeholder")
