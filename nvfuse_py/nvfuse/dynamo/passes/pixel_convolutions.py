"""1x1 convolutions of channels-last images as GEMMs.

A 2-d convolution with a 1x1 kernel, stride 1, no padding, no dilation
and one group mixes each pixel's channels alone: it is the matrix product
of the image's pixels P [N*H*W, C] and the weight W viewed as [O, C].
On an image laid out channels-last (NHWC in memory, as the
`channels_last` pass leaves every convolution's activation), P is a view
of the image, and the product's rows [N*H*W, O] viewed back are the
channels-last result the convolution gives: no copy either way. cuDNN's
call costs the host far more than cuBLAS's: its frontend builds and hashes
an operation graph on every call to find its cached plan, where cuBLAS
picks a kernel from the sizes. A ResNet-50 has 33 such convolutions, run
forward and backward each step, and its training step is bound by the
host.

- forward: `P @ W^T` (addmm with a bias) viewed [N, H, W, O] and permuted
  to [N, O, H, W];
- backward (convolution_backward), with G the output's gradient viewed
  as rows [N*H*W, O] (channels-last too): the input's gradient `G @ W`
  viewed back the same way, the weight's `G^T @ P` viewed [O, C, 1, 1],
  the bias's the sum of G's rows.

Only where every view is free: static sizes, the image and the gradient
channels-last, and the results' meta values channels-last (what torch's
convolutions give for such operands); others stay with cuDNN. CUDA
float32 convolutions stay too: cuDNN runs them in TF32 by default
(torch.backends.cudnn.allow_tf32) and cuBLAS's float32 GEMMs do not
(torch.backends.cuda.matmul.allow_tf32), so the GEMMs would be slower and
round otherwise than the convolution the user asked for. Strided
1x1 convolutions (ResNet's downsampling shortcuts) would read every
other pixel and are left to cuDNN too, which reads them in place."""

import torch

from .graph_edits import (
    NCHW_OF_NHWC,
    NHWC,
    has_static_layout,
    insert_call,
    insert_matmul,
    meta_of,
    rewrite_convolutions,
    wanted_gradients,
)

aten = torch.ops.aten


def rewrite_pixel_convolutions(gm):
    """Rewrites `gm`'s 1x1 convolutions of channels-last images, and their
    backwards, as GEMMs (see the module); True when it changed the graph."""
    return rewrite_convolutions(gm, _is_pixel_convolution, _rewrite_forward, _rewrite_backward)


def _is_channels_last(meta):
    """Whether `meta`, a 4-d tensor, is dense in NHWC order (its
    pixels are rows of channels)."""
    return meta.permute(NHWC).is_contiguous()


def _is_pixel_convolution(node, image_index):
    """Whether convolution (or convolution_backward) `node`, whose image is
    argument `image_index` (after the gradient, in a backward), is a 2-d
    1x1 convolution of stride 1 over channels-last operands of static
    sizes."""
    operands = [meta_of(a) for a in node.args[: image_index + 2]]
    if not all(has_static_layout(m) and m.dim() == 4 for m in operands):
        return False
    *activations, weight = operands
    stride, padding, dilation, transposed = node.args[image_index + 3 : image_index + 7]
    groups = node.args[image_index + 8]
    return (
        list(weight.shape[2:]) == [1, 1]
        and all(s == 1 for s in stride)
        and all(p == 0 for p in padding)
        and all(d == 1 for d in dilation)
        and not transposed
        and groups == 1
        and all(_is_channels_last(a) and a.dtype == weight.dtype for a in activations)
        and not (weight.device.type == "cuda" and weight.dtype == torch.float32)
    )


def _rows(graph, anchor, x):
    """Channels-last `x` [N, C, H, W] as its pixels' rows [N*H*W, C] (a view)."""
    n, c, h, w = meta_of(x).shape
    nhwc = insert_call(graph, anchor, aten.permute.default, (x, NHWC))
    return insert_call(graph, anchor, aten.view.default, (nhwc, [n * h * w, c]))


def _image_of_rows(graph, anchor, rows, shape):
    """Rows [N*H*W, C] as the channels-last image [N, C, H, W] (a view)."""
    n, c, h, w = shape
    nhwc = insert_call(graph, anchor, aten.view.default, (rows, [n, h, w, c]))
    return insert_call(graph, anchor, aten.permute.default, (nhwc, NCHW_OF_NHWC))


def _weight_matrix(graph, anchor, weight):
    """The weight [O, C, 1, 1] as [O, C]: a view, unless its channels are
    not dense (a transposed weight), then a copy."""
    meta = meta_of(weight)
    view = aten.view.default if meta.is_contiguous() else aten.reshape.default
    return insert_call(graph, anchor, view, (weight, list(meta.shape[:2])))


def _rewrite_forward(graph, node):
    image, weight, bias = node.args[:3]
    if not _is_channels_last(meta_of(node)):
        return False
    pixels = _rows(graph, node, image)
    weight_t = insert_call(graph, node, aten.t.default, (_weight_matrix(graph, node, weight),))
    rows = insert_matmul(graph, node, pixels, weight_t, bias)
    node.replace_all_uses_with(_image_of_rows(graph, node, rows, meta_of(node).shape))
    return True


def _rewrite_backward(graph, node):
    grad_out, image, weight = node.args[:3]
    wanted = wanted_gradients(node)
    if 0 in wanted and not _is_channels_last(meta_of(wanted[0])):
        return False
    grad_rows = _rows(graph, node, grad_out)
    results = {}
    if 0 in wanted:
        rows = insert_call(
            graph, node, aten.mm.default, (grad_rows, _weight_matrix(graph, node, weight))
        )
        results[0] = _image_of_rows(graph, node, rows, meta_of(image).shape)
    if 1 in wanted:
        grad_rows_t = insert_call(graph, node, aten.t.default, (grad_rows,))
        matrix = insert_call(graph, node, aten.mm.default, (grad_rows_t, _rows(graph, node, image)))
        results[1] = insert_call(
            graph, node, aten.view.default, (matrix, list(meta_of(weight).shape))
        )
    if 2 in wanted:
        results[2] = insert_call(graph, node, aten.sum.dim_IntList, (grad_rows, [0]))
    for k, item in wanted.items():
        item.replace_all_uses_with(results[k])
    return True
