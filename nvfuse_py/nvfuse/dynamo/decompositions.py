"""The decompositions AOTAutograd applies before nvfuse sees a graph:
torch's core ATen set, plus composites that are pointwise ops and
reductions underneath (norms, softmax, GELU, SiLU, losses, batch norm and
their backwards), so that they fuse with their neighbours. Matmuls,
convolutions and attention stay whole, and so do the ops nvfuse
translates whole (KEPT_WHOLE)."""

import torch

aten = torch.ops.aten

# Ops torch keeps whole in its core ATen set that are pointwise ops and
# reductions underneath: decomposed, they fuse with their neighbours.
FUSIBLE_COMPOSITES = [
    "native_layer_norm",
    "native_layer_norm_backward",
    "_fused_rms_norm",
    "_fused_rms_norm_backward",
    "gelu",
    "gelu_backward",
    "silu",
    "silu_backward",
    "_softmax",
    "_softmax_backward_data",
    "_log_softmax",
    "_log_softmax_backward_data",
    "nll_loss_forward",
    "nll_loss_backward",
    "sigmoid_backward",
    "tanh_backward",
    "threshold_backward",
    "hardtanh",
    "leaky_relu",
    "mse_loss",
    "addcmul",
    "lerp",
    "native_group_norm",
    "native_group_norm_backward",
    "mish",
    "hardswish",
    # Batch norm, training and inference: var_mean and pointwise ops, with
    # the new running statistics as outputs that functionalization writes
    # back with copy_ (which nvfuse fuses too, passes/in_place_updates.py).
    "_native_batch_norm_legit_functional",
    "_native_batch_norm_legit_no_training",
    "_native_batch_norm_legit",
    "native_batch_norm",
]

# Ops in torch's core set that stay whole rather than as torch decomposes
# them: the embedding backward runs as ATen's own kernel (support.py,
# LEFT_TO_ATEN), where the decomposition's index_put accumulates repeated
# indices one after another.
KEPT_WHOLE = {aten.embedding_dense_backward}


def _kept_whole(op):
    return "scaled_dot_product" in str(op) or getattr(op, "overloadpacket", None) in KEPT_WHOLE


def decompositions():
    """The table: torch's core ATen decompositions except attention
    (torch's decomposition of CPU flash attention also gets the causal
    backward wrong) and KEPT_WHOLE, plus FUSIBLE_COMPOSITES."""
    table = {
        op: fn for op, fn in torch._decomp.core_aten_decompositions().items() if not _kept_whole(op)
    }
    packets = [getattr(aten, n) for n in FUSIBLE_COMPOSITES if hasattr(aten, n)]
    table.update(torch._decomp.get_decompositions(packets))
    return table
