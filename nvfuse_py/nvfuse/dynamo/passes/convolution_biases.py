"""Convolution biases added, and their gradients summed, by the regions
around the convolution rather than by ATen.

ATen's cuDNN convolution adds its bias after the kernel, as a broadcast
`add_` of its own: one more pass over the whole output, by a generic
elementwise kernel (ConvNeXt's depthwise 7x7 convolutions: 18 of them,
about 20 us each on an H200 at batch 64). Its backward sums the
output's gradient over the batch and the pixels for the bias's gradient
with ATen's reduction, which read ConvNeXt's channels-last bf16 gradients
at about a tenth of the copy bandwidth. Both are work for generated
kernels:

- forward: `convolution(x, w, b)` becomes `convolution(x, w) + b`
  broadcast along the channels, where a region reads the output
  (ConvNeXt's permute and layer norm), which then adds the bias as it
  reads;
- backward: `convolution_backward`'s bias gradient becomes the sum of the
  output's gradient over every axis but the channels, a generated column
  reduction (the partitioner groups it with the step's other
  weight-gradient sums).

The value is the same: ATen adds the bias to the rounded convolution in
the output's dtype, as the region does, and sums the gradient in float
with the result in its dtype, as the region's reduction does. A rewrite
whose meta value would differ from the original's (sizes, strides,
dtype) is not made."""

import torch

from .graph_edits import (
    call_meta,
    computed_in_a_region,
    insert_call,
    meta_of,
    rewrite_convolutions,
    same_tensor_layout,
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


def _permute_reading(node):
    """The permute reading convolution `node` when it is the result's only
    reader besides the graph's output (a training forward saves the
    result for the backward), else None."""
    readers = [u for u in node.users if u.op != "output"]
    if len(readers) == 1 and readers[0].target == aten.permute.default:
        return readers[0]
    return None


def _add_bias_after(graph, node):
    """Replaces convolution `node` by the convolution without its bias plus
    the bias, added after the permute reading the result where there is
    one (ConvNeXt's permute to channels-last order): a region cuts its
    fusion at a permute of a value it computes, so an add before the
    permute would be a kernel of its own. The graph's output, if it
    returns the result, gets the sum permuted back (a view). Nothing
    changes unless the sum has the layout of the value it replaces."""
    image, weight, bias = node.args[:3]
    output = meta_of(node)
    permute = _permute_reading(node)
    replaced = node if permute is None else permute
    dims = (
        list(range(output.dim()))
        if permute is None
        else [d % output.dim() for d in permute.args[1]]
    )
    inverse = sorted(range(len(dims)), key=dims.__getitem__)
    broadcast = [1] * output.dim()
    broadcast[dims.index(1)] = output.shape[1]
    returned = replaced is not node and len(node.users) > 1
    summed = meta_of(replaced) + meta_of(bias).view(broadcast)
    if not same_tensor_layout(summed, meta_of(replaced)) or (
        returned and not same_tensor_layout(summed.permute(inverse), output)
    ):
        return False
    plain = insert_call(
        graph, node, aten.convolution.default, (image, weight, None, *node.args[3:])
    )
    if permute is not None:
        plain = insert_call(graph, permute, aten.permute.default, (plain, dims))
    bias_view = insert_call(graph, replaced, aten.view.default, (bias, broadcast))
    biased = insert_call(graph, replaced, aten.add.Tensor, (plain, bias_view))
    replaced.replace_all_uses_with(biased)
    if returned:
        permuted_back = insert_call(graph, replaced, aten.permute.default, (biased, inverse))
        node.replace_all_uses_with(permuted_back, delete_user_cb=lambda user: user.op == "output")
    return True


def _sum_bias_gradient(graph, node):
    grad_output = node.args[0]
    wanted = wanted_gradients(node)
    sum_call = (aten.sum.dim_IntList, (grad_output, [0, *range(2, meta_of(grad_output).dim())]))
    if not same_tensor_layout(call_meta(*sum_call), meta_of(wanted[2])):
        return False
    summed = insert_call(graph, node, *sum_call)
    wanted[2].replace_all_uses_with(summed)
    graph.erase_node(wanted[2])
    mask = list(node.args[10])
    mask[2] = False
    node.args = (*node.args[:10], mask)
    values = list(node.meta["val"])
    values[2] = None
    node.meta["val"] = tuple(values)
    return True
