"""Convolutions on channels-last tensors (the backend's `channels_last`
option), as Inductor's layout optimization runs them.

cuDNN's convolution kernels for half types on Hopper read and write NHWC;
given NCHW tensors, cuDNN converts the input and the weight to NHWC and
the result back with kernels of its own, three launches around every
convolution and more around its backward. With the activations each
convolution reads made channels-last in the graph, its result is
channels-last, the regions after it (batch norm, ReLU, the residual add)
keep that layout (each region output is laid out as its meta value says),
and the next convolution reads it as it is: what remains is one copy of
the graph's input image, and cuDNN's conversion of each weight inside its
convolution call.

The pass changes the graph's meta values, so it propagates them again
from the example inputs (static sizes only, as Inductor). Outputs the
user sees keep the layout they had; the tensors the forward saves for the
backward keep the new one, and the forward reports every output's strides
to AOTAutograd (TracingContext.output_strides, as Inductor does), which
lays out the backward's inputs by them. The backward graph propagates its
meta values from those inputs, and its convolutions' operands are made
channels-last the same way."""

import copy

import torch
from torch._guards import TracingContext, detect_fake_mode
from torch.fx.passes.fake_tensor_prop import FakeTensorProp

from .graph_edits import finish_rewrite, has_static_layout, insert_call

aten = torch.ops.aten

# The 4-d activations each convolution op reads. Weights keep their layout:
# given a channels-last activation, cuDNN (and oneDNN on the CPU) runs the
# convolution channels-last and converts the weight inside its own call,
# where a copy in the graph is a call of its own on the host (on the H200
# machines' host a fused copy costs about 40 us; ResNet-50 has 53 weights).
CONVOLUTION_OPERANDS = {
    aten.convolution.default: (0,),
    aten.convolution_backward.default: (0, 1),
}


def run_convolutions_channels_last(gm, example_inputs, kind, when=True):
    """Makes the 4-d operands of `gm`'s convolutions channels-last (see the
    module); True when it changed the graph. `kind`: "forward",
    "backward" or "inference", as AOTAutograd compiles it. `when`: the
    backend's option, True, False or "auto" (channels_last_pays decides a
    forward or inference graph; a backward follows its forward, whose
    choice shows in the layout of the activations it saved)."""
    if not when:
        return False
    fake_mode = detect_fake_mode(example_inputs)
    if fake_mode is None or not _all_static(example_inputs) or not _has_convolution(gm):
        return False
    if when == "auto":
        chosen = _inputs_restrided(gm, example_inputs) if kind == "backward" else None
        when = chosen if chosen is not None else channels_last_pays(gm)
    if not when:
        return False
    edited = copy.deepcopy(gm)
    before = _output_metas(edited)
    if not _convert_until_channels_last(edited, example_inputs, fake_mode):
        return False
    if not _keep_user_output_layouts(edited, before, _user_output_count(kind, before)):
        return False  # an output the user sees would change in a way not restored here
    gm.graph = edited.graph
    finish_rewrite(gm, [True])
    if kind == "forward":
        _report_output_strides(gm)
    return True


def channels_last_pays(gm):
    """Whether the option's "auto" turns channels-last on for a forward or
    inference graph: every convolution 2-d, on CUDA in a half type (cuDNN's
    NHWC kernels), not transposed, not grouped, and none narrowing its
    channels with a kernel wider than 1x1. Measured on one H200, ResNet-50
    (all such convolutions) gains from it: fewer launches, no layout
    conversions and less memory; ConvNeXt (depthwise convolutions) was
    slower with it. Transposed and channel-narrowing convolutions are left
    out as Inductor's layout optimization leaves them out."""
    convolutions = [
        n
        for n in gm.graph.nodes
        if n.op == "call_function" and n.target is aten.convolution.default
    ]
    return bool(convolutions) and all(_suits_channels_last(n) for n in convolutions)


def _suits_channels_last(node):
    args = list(node.args) + [None] * (9 - len(node.args))
    image, weight, transposed, groups = args[0], args[1], args[6], args[8]
    image = image.meta.get("val") if isinstance(image, torch.fx.Node) else None
    weight = weight.meta.get("val") if isinstance(weight, torch.fx.Node) else None
    if not isinstance(image, torch.Tensor) or not isinstance(weight, torch.Tensor):
        return False
    if image.dim() != 4 or weight.dim() != 4 or transposed or (groups or 1) != 1:
        return False
    if image.device.type != "cuda" or image.dtype not in (torch.bfloat16, torch.float16):
        return False
    out_channels, in_channels, kernel_h, kernel_w = weight.shape
    return not (in_channels > out_channels and kernel_h * kernel_w > 1)


def _all_static(values):
    return all(not isinstance(v, torch.Tensor) or has_static_layout(v) for v in values)


def _has_convolution(gm):
    return any(n.op == "call_function" and n.target in CONVOLUTION_OPERANDS for n in gm.graph.nodes)


def _is_channels_last(meta):
    return meta.is_contiguous(memory_format=torch.channels_last)


def _convert_until_channels_last(gm, example_inputs, fake_mode):
    """Copies the activations convolutions read into channels-last until
    every one is, propagating the meta values after each round; True when
    the graph changed. The first round copies only the graph's inputs (the
    image): what a channels-last convolution makes stays
    channels-last through the ops after it, so copying every NCHW operand
    at once, by the meta values before propagation, would copy tensors
    that are channels-last already. A backward first takes its inputs'
    layouts from AOTAutograd."""

    def propagate():
        FakeTensorProp(gm, mode=fake_mode).propagate_dont_convert_inputs(*example_inputs)

    changed = _inputs_restrided(gm, example_inputs)
    if changed:
        propagate()
    if _convert_operands(gm, inputs_only=True):
        changed = True
        propagate()
    # Each operand is copied at most once (a copy stays channels-last).
    while _convert_operands(gm, inputs_only=False):
        changed = True
        propagate()
    return changed


def _convert_operands(gm, inputs_only):
    """Inserts a channels-last copy before each convolution of each 4-d
    operand not laid out so (of the graph's inputs only, when asked; one
    copy per value, shared); True when it inserted any."""
    copies = {}
    for node in list(gm.graph.nodes):
        operands = CONVOLUTION_OPERANDS.get(node.target) if node.op == "call_function" else None
        for index in operands or ():
            value = node.args[index]
            meta = value.meta.get("val") if isinstance(value, torch.fx.Node) else None
            if not isinstance(meta, torch.Tensor) or meta.dim() != 4 or _is_channels_last(meta):
                continue
            if inputs_only and value.op != "placeholder":
                continue
            if value not in copies:
                copies[value] = insert_call(
                    gm.graph,
                    node,
                    aten.clone.default,
                    (value,),
                    {"memory_format": torch.channels_last},
                )
            node.update_arg(index, copies[value])
    return bool(copies)


def _inputs_restrided(gm, example_inputs):
    """Whether AOTAutograd laid out an input otherwise than the graph's meta
    value says (the saved activations of a channels-last forward)."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for node, value in zip(placeholders, example_inputs):
        meta = node.meta.get("val")
        if isinstance(meta, torch.Tensor) and isinstance(value, torch.Tensor):
            if meta.stride() != value.stride():
                return True
    return False


def _outputs(gm):
    return list(next(n for n in gm.graph.nodes if n.op == "output").args[0])


def _output_metas(gm):
    return [v.meta.get("val") if isinstance(v, torch.fx.Node) else None for v in _outputs(gm)]


def _user_output_count(kind, outputs):
    """How many of the graph's first outputs the user sees: all of an
    inference graph's; a forward's returns (its mutated inputs and outputs,
    before what it saves for the backward); none of a backward's (autograd
    accumulates gradients in any layout)."""
    if kind == "inference":
        return len(outputs)
    if kind == "backward":
        return 0
    context = TracingContext.try_get()
    metadata = getattr(context, "fw_metadata", None) if context is not None else None
    count = getattr(metadata, "num_forward_returns", None)
    return len(outputs) if count is None else count


def _keep_user_output_layouts(gm, before, user_outputs):
    """Copies each of the first `user_outputs` outputs whose layout changed
    back into its old one (contiguous or channels-last); False when an old
    layout is neither."""
    output_node = next(n for n in gm.graph.nodes if n.op == "output")
    values = list(output_node.args[0])
    for k in range(user_outputs):
        old, value = before[k], values[k]
        new = value.meta.get("val") if isinstance(value, torch.fx.Node) else None
        if not isinstance(new, torch.Tensor) or not isinstance(old, torch.Tensor):
            continue
        if new.stride() == old.stride():
            continue
        if old.is_contiguous():
            layout = torch.contiguous_format
        elif old.dim() == 4 and _is_channels_last(old):
            layout = torch.channels_last
        else:
            return False
        values[k] = insert_call(
            gm.graph, output_node, aten.clone.default, (value,), {"memory_format": layout}
        )
    output_node.args = (values,)
    return True


def _report_output_strides(gm):
    """The forward's output strides, for AOTAutograd to lay out the
    backward's inputs by (see the module)."""
    context = TracingContext.try_get()
    if context is None or context.output_strides is None:
        return
    context.output_strides.clear()
    for meta in _output_metas(gm):
        context.output_strides.append(
            tuple(meta.stride()) if isinstance(meta, torch.Tensor) else None
        )
