"""An LM head whose logits feed only a cross-entropy loss becomes one
chunked call (linear_cross_entropy.py), on Dynamo's graph, before
AOTAutograd.

The pattern is transformers' causal-LM loss, and any loss written the
same way:

    logits = linear(x, weight)                 # no bias
    logits = logits.float()                    # optional: float, to(float32)
    loss = cross_entropy(logits.view(-1, V), target, ignore_index=...,
                         reduction="mean" or "sum")

where every step between the linear and the loss has no other user: the
graph must not return the logits. So it matches where the loss alone
leaves the compiled code (`torch.compile(lambda batch: model(**batch).loss)`,
or a compiled training step), not where a compiled model returns its
logits with the loss. Class weights, label smoothing, probability targets,
`reduction="none"` and autocast (the linear's dtype differs from its
operands') keep torch's composite, as do logits under
MIN_LOGITS_ELEMENTS, which fit in memory as they are."""

import inspect

import torch
import torch.nn.functional as F

from .example_values import example_tensor
from .linear_cross_entropy import linear_cross_entropy

# Logits smaller than this (rows x vocabulary) keep torch's composite.
MIN_LOGITS_ELEMENTS = 1 << 24

_LINEARS = {F.linear, torch._C._nn.linear}
_LOSSES = {F.cross_entropy}
# Steps between the linear and the loss that change the logits' dtype to
# float32 or their view over rows, nothing else.
_RESHAPES = {"view", "reshape", "flatten", "contiguous"}
_RESHAPE_FUNCTIONS = {torch.reshape, torch.flatten}


def _cross_entropy_signature(
    input,
    target,
    weight=None,
    size_average=None,
    ignore_index=-100,
    reduce=None,
    reduction="mean",
    label_smoothing=0.0,
):
    pass


_SIGNATURE = inspect.signature(_cross_entropy_signature)


def chunk_lm_head_losses(gm):
    """Rewrites gm's LM-head losses (see the module) into chunked calls;
    the number rewritten."""
    count = 0
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and node.target in _LOSSES:
            count += _chunk(gm.graph, node)
    if count:
        gm.graph.eliminate_dead_code()
        gm.graph.lint()
        gm.recompile()
    return count


def _chunk(graph, loss):
    try:
        arguments = _SIGNATURE.bind(*loss.args, **loss.kwargs).arguments
    except TypeError:
        return 0
    if not _plain_loss(arguments):
        return 0
    linear = _linear_under(arguments["input"], loss)
    if linear is None or not _fits(linear, arguments["input"], arguments["target"]):
        return 0
    x, weight = linear.args[0], linear.args[1]
    dtype = example_tensor(arguments["input"]).dtype
    with graph.inserting_before(loss):
        chunked = graph.call_function(
            linear_cross_entropy,
            (x, weight, arguments["target"]),
            {
                "ignore_index": arguments.get("ignore_index", -100),
                "reduction": arguments.get("reduction", "mean"),
                "dtype": dtype,
            },
        )
    chunked.meta.update(loss.meta)
    loss.replace_all_uses_with(chunked)
    graph.erase_node(loss)
    return 1


def _plain_loss(arguments):
    """Class indices, no class weights, no label smoothing, a mean or sum."""
    return (
        arguments.get("weight") is None
        and arguments.get("size_average") is None
        and arguments.get("reduce") is None
        and arguments.get("reduction", "mean") in ("mean", "sum")
        and arguments.get("label_smoothing", 0.0) == 0.0
        and isinstance(arguments.get("ignore_index", -100), int)
    )


def _only_user_is(node, user):
    return isinstance(node, torch.fx.Node) and list(node.users) == [user]


def _linear_under(logits, loss):
    """The bias-free linear `logits` is made from through float32 casts
    and reshapes, each read only by the next (and `logits` only by the
    loss); else None."""
    node, reader = logits, loss
    while isinstance(node, torch.fx.Node):
        if not _only_user_is(node, reader):
            return None
        if node.op == "call_function" and node.target in _LINEARS:
            bias = node.args[2] if len(node.args) > 2 else node.kwargs.get("bias")
            return node if bias is None and len(node.args) >= 2 else None
        if not _casts_to_float_or_reshapes(node):
            return None
        node, reader = node.args[0], node
    return None


def _casts_to_float_or_reshapes(node):
    if node.op == "call_function":
        return node.target in _RESHAPE_FUNCTIONS
    if node.op != "call_method":
        return False
    if node.target in _RESHAPES or node.target == "float":
        return True
    if node.target == "to":
        dtypes = [a for a in (*node.args[1:], *node.kwargs.values()) if isinstance(a, torch.dtype)]
        return dtypes == [torch.float32] and len(node.args) + len(node.kwargs) == 2
    return False


def _fits(linear, logits, target):
    """Static sizes, the linear in its operands' dtype, logits [rows,
    vocab] with the linear's rows, integer targets [rows], and logits of
    at least MIN_LOGITS_ELEMENTS."""
    x, weight, out = (example_tensor(n) for n in (linear.args[0], linear.args[1], linear))
    flat, labels = example_tensor(logits), example_tensor(target)
    if any(t is None for t in (x, weight, out, flat, labels)):
        return False
    if not all(isinstance(n, int) for t in (x, weight, flat, labels) for n in t.shape):
        return False
    if weight.dim() != 2 or x.dim() < 1 or flat.dim() != 2 or labels.dim() != 1:
        return False
    if not (x.dtype == weight.dtype == out.dtype and flat.dtype in (out.dtype, torch.float32)):
        return False
    if labels.dtype not in (torch.int64, torch.int32) or x.device != weight.device:
        return False
    rows, vocab = flat.shape
    return (
        vocab == weight.shape[0]
        and rows == x.numel() // x.shape[-1]
        and labels.shape[0] == rows
        and rows * vocab >= MIN_LOGITS_ELEMENTS
    )
