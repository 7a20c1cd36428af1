"""Which outputs of a graph AOTAutograd hands to the user and nothing else.

A forward graph returns, in order, the inputs it mutates, the model's
outputs, the bases of outputs that alias intermediates, and the tensors
saved for the backward (AOTAutograd's ViewAndMutationMeta, on the tracing
context while the backend compiles). A model output whose node is not
also returned in another role, and which AOTAutograd returns as it is
(rather than regenerating it as a view of a base), reaches only the user:
its strides are free for the backend to choose (Inductor's padded GEMMs
return such outputs with padded rows too). A saved tensor is read by the
backward graph, which was traced for the meta value's strides."""

import torch

_RETURNED_AS_THEY_ARE = ("non_alias", "unsafe_view_alias")


def user_only_outputs(gm, kind):
    """The positions among `gm`'s outputs that only the user reads (a
    frozenset; empty for a backward graph, whose outputs are gradients
    autograd accumulates, and when AOTAutograd's metadata is not at hand)."""
    if kind == "backward":
        return frozenset()
    context = torch._guards.TracingContext.try_get()
    meta = getattr(context, "fw_metadata", None) if context is not None else None
    if meta is None:
        return frozenset()
    (output,) = [n for n in gm.graph.nodes if n.op == "output"]
    outputs = (
        list(output.args[0]) if isinstance(output.args[0], (tuple, list)) else [output.args[0]]
    )
    start = meta.num_mutated_inp_runtime_indices
    end = start + meta.num_outputs
    if end > len(outputs) or len(meta.output_info) != meta.num_outputs:
        return frozenset()
    model_outputs = range(start, end)
    elsewhere = [outputs[k] for k in range(len(outputs)) if k not in model_outputs]
    return frozenset(
        k
        for k in model_outputs
        if meta.output_info[k - start].output_type.name in _RETURNED_AS_THEY_ARE
        and isinstance(outputs[k], torch.fx.Node)
        and all(outputs[k] is not other for other in elsewhere)
    )
