"""Patch convolutions as GEMMs.

A convolution whose kernel tiles its input (stride equal to the kernel's
size, no padding, no dilation, one group: the patch embedding of vision
transformers, ConvNeXt's and Swin's stems) reads each input element once.
It is a matrix product of the image's patches P [N*Ho*Wo, C*kh*kw], a
permuted view of the image copied dense, and the weight W viewed as
[O, C*kh*kw]. cuDNN runs it as a general convolution, with kernels of its
own that convert the NCHW image and the result between layouts, forward
and backward, and its host-side setup is the costliest of the step's
calls. As GEMMs it is one copy of the image and cuBLAS's kernels:

- forward: `P @ W^T` (addmm with a bias) is the result in NHWC order,
  [N*Ho*Wo, O]; a permuted view of it is the result, copied into the
  layout torch's meta value promises where that is not NHWC;
- backward (convolution_backward), with G the output's gradient as rows
  [N*Ho*Wo, O]: the weight's gradient `G^T @ P`, the bias's the sum of
  G's rows, the input's `G @ W` permuted back into the image's layout.

Static sizes only, 2-d convolutions whose input's height and width are
multiples of the kernel's, and results laid out as the rewrite makes
them (dense NCHW or NHWC, as torch's convolutions give them). A 1x1
convolution is a patch convolution too, but is left to cuDNN: a ResNet
has dozens between its batch norms, where the GEMMs' NHWC copies of NCHW
activations have not been measured against cuDNN's own conversions."""

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

# The patches' axes from the image viewed as [N, C, Ho, kh, Wo, kw], and
# back: [N, Ho, Wo, C, kh, kw].
_PATCH_ORDER = [0, 2, 4, 1, 3, 5]
_IMAGE_ORDER = [0, 3, 1, 4, 2, 5]


def rewrite_patch_convolutions(gm):
    """Rewrites `gm`'s patch convolutions and their backwards as GEMMs (see
    the module); True when it changed the graph."""
    return rewrite_convolutions(gm, _is_patch_convolution, _rewrite_forward, _rewrite_backward)


def _is_patch_convolution(node, image_index):
    """Whether convolution (or convolution_backward) `node`, whose image is
    argument `image_index`, is a 2-d patch convolution of static sizes."""
    image, weight = meta_of(node.args[image_index]), meta_of(node.args[image_index + 1])
    if not all(has_static_layout(m) and m.dim() == 4 for m in (image, weight)):
        return False
    stride, padding, dilation, transposed = node.args[image_index + 3 : image_index + 7]
    groups = node.args[image_index + 8]
    kernel = list(weight.shape[2:])
    return (
        list(stride) == kernel
        and kernel[0] * kernel[1] > 1
        and all(p == 0 for p in padding)
        and all(d == 1 for d in dilation)
        and not transposed
        and groups == 1
        and image.shape[2] % kernel[0] == 0
        and image.shape[3] % kernel[1] == 0
        and image.dtype == weight.dtype
    )


def _is_dense_in(meta, order):
    """Whether `meta` is dense with its axes outermost-first in `order`."""
    return meta.permute(order).is_contiguous()


def _dense(graph, anchor, x):
    """Node `x`, copied dense (row-major) unless it is."""
    if meta_of(x).is_contiguous():
        return x
    return insert_call(
        graph, anchor, aten.clone.default, (x,), {"memory_format": torch.contiguous_format}
    )


def _view(graph, anchor, x, shape):
    return insert_call(graph, anchor, aten.view.default, (x, list(shape)))


def _permute(graph, anchor, x, order):
    return insert_call(graph, anchor, aten.permute.default, (x, order))


def _patches(graph, anchor, image, kernel):
    """The image's patches as dense rows [N*Ho*Wo, C*kh*kw]."""
    n, c, h, w = meta_of(image).shape
    kh, kw = kernel
    split = _view(graph, anchor, image, [n, c, h // kh, kh, w // kw, kw])
    patches = _dense(graph, anchor, _permute(graph, anchor, split, _PATCH_ORDER))
    return _view(graph, anchor, patches, [n * (h // kh) * (w // kw), c * kh * kw])


def _weight_rows(graph, anchor, weight):
    """The weight [O, C, kh, kw] as dense rows [O, C*kh*kw]."""
    o = meta_of(weight).shape[0]
    return _view(graph, anchor, _dense(graph, anchor, weight), [o, -1])


def _rewrite_forward(graph, node):
    image, weight, bias = node.args[:3]
    out = meta_of(node)
    nhwc_result = _is_dense_in(out, NHWC)
    if not (out.is_contiguous() or nhwc_result):
        return False
    n, o, ho, wo = out.shape
    patches = _patches(graph, node, image, meta_of(weight).shape[2:])
    weight_t = insert_call(graph, node, aten.t.default, (_weight_rows(graph, node, weight),))
    rows = insert_matmul(graph, node, patches, weight_t, bias)
    nhwc = _view(graph, node, rows, [n, ho, wo, o])
    result = _permute(graph, node, nhwc, NCHW_OF_NHWC)
    if not nhwc_result:
        result = _dense(graph, node, result)
    node.replace_all_uses_with(result)
    return True


def _rewrite_backward(graph, node):
    grad_out, image, weight = node.args[:3]
    wanted = wanted_gradients(node)
    if not all(meta_of(item).is_contiguous() for item in wanted.values()):
        return False
    n, o, ho, wo = meta_of(grad_out).shape
    kernel = meta_of(weight).shape[2:]
    grad_rows = _view(
        graph, node, _dense(graph, node, _permute(graph, node, grad_out, NHWC)), [n * ho * wo, o]
    )
    results = {}
    if 0 in wanted:
        results[0] = _image_gradient(graph, node, grad_rows, weight, meta_of(image).shape, kernel)
    if 1 in wanted:
        patches = _patches(graph, node, image, kernel)
        grad_rows_t = insert_call(graph, node, aten.t.default, (grad_rows,))
        grad_weight = insert_call(graph, node, aten.mm.default, (grad_rows_t, patches))
        results[1] = _view(graph, node, grad_weight, meta_of(weight).shape)
    if 2 in wanted:
        results[2] = insert_call(graph, node, aten.sum.dim_IntList, (grad_rows, [0]))
    for k, item in wanted.items():
        item.replace_all_uses_with(results[k])
    return True


def _image_gradient(graph, anchor, grad_rows, weight, image_shape, kernel):
    """`G @ W` [N*Ho*Wo, C*kh*kw] back in the image's layout [N, C, H, W]."""
    n, c, h, w = image_shape
    kh, kw = kernel
    rows = insert_call(
        graph, anchor, aten.mm.default, (grad_rows, _weight_rows(graph, anchor, weight))
    )
    split = _view(graph, anchor, rows, [n, h // kh, w // kw, c, kh, kw])
    image = _dense(graph, anchor, _permute(graph, anchor, split, _IMAGE_ORDER))
    return _view(graph, anchor, image, [n, c, h, w])
