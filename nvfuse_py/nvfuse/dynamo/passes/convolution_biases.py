"""Convolution biases added, and their gradients summed, by the regions
around the convolution rather than by ATen.

ATen's cuDNN convolution adds its bias after the kernel, as a broadcast
`add_` of its own: one more pass over the whole output, by a generic
elementwise kernel (ConvNeXt's depthwise 7x7 convolutions: 18 of them,
about 20 us each on an H200 at batch 64). Its backward sums the
output's gradient over the batch and the pixels for the bias's gradient
with ATen's reduction, which read a channels-last bf16 gradient at about a
quarter of the copy bandwidth. Both are work for the regions next to the
convolution, which read or write the same tensor anyway:

- forward: `convolution(x, w, b)` becomes `convolution(x, w) + b` viewed
  [C, 1, ...], where a region reads the output (ConvNeXt's permute and
  layer norm), which then adds the bias as it reads;
- backward: `convolution_backward`'s bias gradient becomes the sum of the
  output's gradient over every axis but the channels, which the region
  computing that gradient (the layer norm's backward) reduces as it
  writes it.

The value is the same: ATen adds the bias to the rounded convolution in
the output's dtype, as the region does, and sums the gradient in float
with the result in its dtype, as the region's reduction does. A rewrite
whose meta value would differ from the original's (sizes, strides,
dtype) is not made."""

import torch

from .graph_edits import (
    computed_in_a_region,
    insert_call,
    meta_of,
    rewrite_convolutions,
    wanted_gradients,
)

aten = torch.ops.aten


def move_convolution_biases_into_regions(gm):
    """Rewrites `gm`'s convolutions with a bias that a region reads, and
    the bias gradients of its convolution backwards (see the module);
    True when it changed the graph."""
    return rewrite_convolutions(gm, _applies, _add_bias_after, _sum_bias_gradient)


def _applies(node, image_index):
    if image_index == 1:
        return 2 in wanted_gradients(node)
    bias = node.args[2]
    return bias is not None and any(computed_in_a_region(user) for user in node.users)


def _same_tensor(a, b):
    return a.shape == b.shape and a.stride() == b.stride() and a.dtype == b.dtype


def _add_bias_after(graph, node):
    image, weight, bias = node.args[:3]
    output = meta_of(node)
    plain = insert_call(
        graph, node, aten.convolution.default, (image, weight, None, *node.args[3:])
    )
    broadcast = [output.shape[1]] + [1] * (output.dim() - 2)
    bias_view = insert_call(graph, node, aten.view.default, (bias, broadcast))
    biased = insert_call(graph, node, aten.add.Tensor, (plain, bias_view))
    if not _same_tensor(meta_of(biased), output):
        for new in (biased, bias_view, plain):
            graph.erase_node(new)
        return False
    node.replace_all_uses_with(biased)
    return True


def _sum_bias_gradient(graph, node):
    grad_output = node.args[0]
    wanted = wanted_gradients(node)
    channels_kept = [0] + list(range(2, meta_of(grad_output).dim()))
    summed = insert_call(graph, node, aten.sum.dim_IntList, (grad_output, channels_kept))
    old = meta_of(wanted[2])
    if meta_of(summed).shape != old.shape or meta_of(summed).dtype != old.dtype:
        graph.erase_node(summed)
        return False
    wanted[2].replace_all_uses_with(summed)
    graph.erase_node(wanted[2])
    mask = list(node.args[10])
    mask[2] = False
    node.args = (*node.args[:10], mask)
    values = list(node.meta["val"])
    values[2] = None
    node.meta["val"] = tuple(values)
    return True
