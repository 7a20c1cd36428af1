"""Chains of views left between the regions, called as one as_strided.

A 1x1 convolution run as a GEMM over a channels-last image reads the
image through a permute and a view, its weight through a view and a
transpose, and returns its result through a view and a permute: six host
calls around one GEMM, 33 times a ResNet-50 inference step. A transformer
reshapes around its attention the same way. Where every size and stride
is known when the graph is compiled, a chain of views of one tensor is one
`as_strided` of that tensor with the last view's sizes and strides: the
same tensor, one call.

That holds only where the tensor the chain starts from has at run time the
strides its meta value says. Chains are folded from tensors that do:

- the graph's inputs whose example input, which AOTAutograd lays out as
  every later call's (Dynamo guards a forward's strides; a backward's
  saved activations are laid out as the forward returns them), has the
  meta value's strides: a backward's meta values may still describe the
  layout the forward had before the backend changed it,
- the regions' outputs whose meta value is dense (each is laid out in
  its meta value's stride order, copied where a fusion returned another
  layout: `FusedRegion`; dense, that is its strides but along axes of
  one element, which no address reads),
- GEMMs' results (always row-major), clones into a memory format (the
  input image's copy into channels-last) and the grouped weight copies
  (laid out as asked).

Convolutions and other ATen ops pick their result's layout at run time
(cuDNN's channels-last or not), so chains from them stay as they are. The
views folded all keep the storage offset of the tensor they view, which
`as_strided` without an offset keeps too."""

import operator

import torch
from torch._prims_common import is_non_overlapping_and_dense_or_false

from ..translate import VIEWS
from .graph_edits import finish_rewrite, has_static_layout, meta_of
from .weight_layouts import GROUPED_COPIES

aten = torch.ops.aten

# Views whose result starts where their operand starts: the views a
# region leaves outside but reshapes (a copy where no view exists), slices
# (an offset) and getitems, and as_strided without an offset (this pass
# makes them so).
_OFFSET_KEEPING_VIEWS = (
    set(VIEWS) - {aten.reshape.default, aten.slice.Tensor, operator.getitem}
) | {aten.as_strided.default}
_ROW_MAJOR_RESULTS = {aten.mm.default, aten.addmm.default, aten.bmm.default, aten.baddbmm.default}
# Memory formats a clone lays its copy out in exactly.
_DENSE_FORMATS = {torch.contiguous_format, torch.channels_last, torch.channels_last_3d}


def fold_view_chains(gm, example_inputs):
    """Folds `gm`'s view chains (see the module); True when it changed the
    graph. Runs on the final graph, before the calls are respelled;
    `example_inputs` are the graph's, as AOTAutograd gave them."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    inputs = {
        node
        for node, value in zip(placeholders, example_inputs)
        if isinstance(value, torch.Tensor) and _same_layout(value, meta_of(node))
    }
    edits = [_fold_into(node, gm.graph, inputs) for node in list(gm.graph.nodes) if _is_view(node)]
    return finish_rewrite(gm, any(edits))


def _same_layout(value, meta):
    return (
        has_static_layout(meta)
        and tuple(value.shape) == tuple(meta.shape)
        and tuple(value.stride()) == tuple(meta.stride())
    )


def _fold_into(node, graph, inputs):
    """Makes view `node` of a view read only by it one as_strided of that
    view's operand, when the chain starts from a tensor laid out as its
    meta value says (of the graph's inputs, those in `inputs`); True when
    it did."""
    source = node.args[0]
    if not (_is_view(source) and len(source.users) == 1 and _has_static_meta(node)):
        return False
    if not _starts_as_meta_says(source, inputs):
        return False
    meta = meta_of(node)
    with graph.inserting_before(node):
        folded = graph.call_function(
            aten.as_strided.default, (source.args[0], list(meta.shape), list(meta.stride()))
        )
    folded.meta.update(node.meta)
    node.replace_all_uses_with(folded)
    graph.erase_node(node)
    graph.erase_node(source)
    return True


def _is_view(node):
    if not (isinstance(node, torch.fx.Node) and node.op == "call_function"):
        return False
    if node.target is aten.as_strided.default and len(node.args) > 3:
        return False  # an explicit storage offset
    return node.target in _OFFSET_KEEPING_VIEWS


def _has_static_meta(node):
    return has_static_layout(meta_of(node))


def _starts_as_meta_says(view, inputs):
    """Whether the chain of views ending in `view` starts from a tensor
    whose run-time strides are its meta value's (see the module)."""
    while _is_view(view):
        if not _has_static_meta(view):
            return False
        view = view.args[0]
    return _laid_out_as_meta_says(view, inputs)


def _laid_out_as_meta_says(node, inputs):
    if not isinstance(node, torch.fx.Node):
        return False
    if node.op == "placeholder":
        return node in inputs
    if node.op == "call_module":
        return _is_dense(meta_of(node))
    if node.op != "call_function":
        return False
    if node.target in _ROW_MAJOR_RESULTS:
        return True
    if node.target is aten.clone.default and node.kwargs.get("memory_format") in _DENSE_FORMATS:
        return True
    if node.target is operator.getitem:
        source = node.args[0]
        if source.op == "call_module":
            return _is_dense(meta_of(node))
        return source.target in GROUPED_COPIES
    return False


def _is_dense(meta):
    return has_static_layout(meta) and is_non_overlapping_and_dense_or_false(meta)
