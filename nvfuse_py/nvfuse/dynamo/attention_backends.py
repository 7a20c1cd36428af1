"""Attention on cuDNN where torch would run it there for the tensors as
cuDNN's op is given them.

`F.scaled_dot_product_attention` is a composite: AOTAutograd traces it
into the op of the backend torch chooses for the call's tensors, and
torch chooses by their layouts too. transformers' encoders (BERT) pass a
boolean [batch, 1, seq, seq] mask expanded from the padding mask, for an
unpadded batch with stride 0 along the keys. For that mask torch picks
its math path, eager and traced alike: float32 batched GEMMs on CUDA
cores around a separate softmax. Torch's cuDNN call would convert a
boolean mask to an additive one anyway, and cuDNN takes that one once it
is laid out densely.

This pass runs on Dynamo's graph, before AOTAutograd. For each attention
call on CUDA tensors it asks torch's choice for real tensors made like the
call's (empty ones of the same sizes, strides, dtypes and requires_grad,
on its device), the mask as the cuDNN op is given it here: additive, of
the query's dtype, and laid out densely where it was boolean or its keys
were not adjacent. Where that is cuDNN, the call becomes ATen's cuDNN
attention op, made as `scaled_dot_product_attention` makes it; its
backward is ATen's cuDNN attention backward. Other calls stay as they are.

A query row whose keys are all masked out gets cuDNN's result (-65504 is
added to each score, so the row attends to all values evenly), where
torch's math path returns zeros; eager gives cuDNN's result too wherever
it picks cuDNN.

Only calls the cuDNN op takes as they are: no dropout (its random stream
is cuDNN's, not torch's generator), no grouped-query expansion, a mask
(boolean or of the query's dtype) that needs no gradient, or none, and
sizes Dynamo fixed."""

import inspect

import torch
import torch.nn.functional as F

from .example_values import example_tensor

_SDPA_TARGETS = {F.scaled_dot_product_attention, torch._C._nn.scaled_dot_product_attention}
_CUDNN = 3  # SDPBackend.CUDNN_ATTENTION, as torch._fused_sdp_choice numbers it


def _sdpa_signature(
    query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False
):
    pass


_SIGNATURE = inspect.signature(_sdpa_signature)


def is_attention_call(node):
    return node.op == "call_function" and node.target in _SDPA_TARGETS


def attention_arguments(node):
    """An attention call's arguments by name (those it was given), or None
    where they do not bind to scaled_dot_product_attention's signature."""
    try:
        return dict(_SIGNATURE.bind(*node.args, **node.kwargs).arguments)
    except TypeError:
        return None


def _laid_out_anew(mask):
    """Whether cudnn_attention gives the op a dense copy of `mask` rather
    than the mask itself: a boolean one becomes additive, and one whose
    keys are not adjacent is copied."""
    return mask.dtype == torch.bool or mask.stride()[-1] != 1


def cudnn_attention(query, key, value, attn_mask, is_causal, scale):
    """What scaled_dot_product_attention computes when it picks cuDNN,
    without dropout: a boolean mask as the additive one torch gives cuDNN
    (-65504 where masked out, not -inf), laid out densely, as is a mask
    whose keys are not adjacent; the log-sum-exp only where a backward will
    read it."""
    if attn_mask is not None and _laid_out_anew(attn_mask):
        if attn_mask.dtype == torch.bool:
            zero = torch.zeros((), dtype=query.dtype, device=attn_mask.device)
            attn_mask = torch.where(attn_mask, zero, -65504.0)
        attn_mask = attn_mask.contiguous()
    needs_lse = torch.is_grad_enabled() and (
        query.requires_grad or key.requires_grad or value.requires_grad
    )
    return torch.ops.aten._scaled_dot_product_cudnn_attention(
        query, key, value, attn_mask, needs_lse, 0.0, is_causal, False, scale=scale
    )[0]


def _static(t):
    return all(isinstance(n, int) for n in (*t.shape, *t.stride()))


def _real_like(t, dtype=None, dense=False):
    """An empty real tensor with `t`'s sizes, strides (contiguous ones
    when `dense`), dtype (or `dtype`), device and requires_grad."""
    strides = torch.empty(t.shape, device="meta").stride() if dense else t.stride()
    real = torch.empty_strided(
        tuple(t.shape), tuple(strides), dtype=dtype or t.dtype, device=t.device
    )
    return real.requires_grad_(t.requires_grad)


def _real_choice(q, k, v, mask, is_causal, scale):
    """torch's choice for real tensors like q, k and v, with the mask as
    cudnn_attention gives it to the op; None where they do not fit in the
    device's memory (the call then stays as it is)."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    try:
        with unset_fake_temporarily():
            return _choice_of_empty_tensors(q, k, v, mask, is_causal, scale)
    except torch.OutOfMemoryError:
        return None


def _choice_of_empty_tensors(q, k, v, mask, is_causal, scale):
    real = [_real_like(t) for t in (q, k, v)]
    real_mask = None
    if mask is not None:  # as cudnn_attention gives it to the op
        real_mask = _real_like(mask, dtype=q.dtype, dense=_laid_out_anew(mask))
    return torch._fused_sdp_choice(*real, real_mask, 0.0, is_causal, scale=scale)


def _cudnn_call(node):
    """(q, k, v, mask, is_causal, scale) of an attention call the cuDNN op
    takes as it is and torch runs on cuDNN for real tensors, else None."""
    a = attention_arguments(node)
    if a is None:
        return None
    q, k, v = (example_tensor(a[n]) for n in ("query", "key", "value"))
    mask_arg = a.get("attn_mask")
    mask = example_tensor(mask_arg)
    dropout, causal = a.get("dropout_p", 0.0), a.get("is_causal", False)
    scale, gqa = a.get("scale"), a.get("enable_gqa", False)
    if any(t is None or not t.is_cuda or not _static(t) for t in (q, k, v)):
        return None
    if mask_arg is not None and (
        mask is None
        or not _static(mask)
        or mask.dtype not in (q.dtype, torch.bool)
        or mask.requires_grad
        or mask.device != q.device
    ):
        return None
    if dropout != 0.0 or gqa is not False or not isinstance(causal, bool):
        return None
    if scale is not None and not isinstance(scale, (int, float)):
        return None
    if _real_choice(q, k, v, mask, causal, scale) != _CUDNN:
        return None
    return (a["query"], a["key"], a["value"], mask_arg, causal, scale)


def attention_on_cudnn(gm):
    """Rewrites gm's attention calls that torch would run on cuDNN for
    tensors as the op is given them into ATen's cuDNN attention op; the
    number rewritten."""
    count = 0
    for node in list(gm.graph.nodes):
        if not is_attention_call(node):
            continue
        call = _cudnn_call(node)
        if call is None:
            continue
        node.target = cudnn_attention
        node.args, node.kwargs = call, {}
        count += 1
    if count:
        gm.recompile()
    return count
