"""The ATen calls left between the regions, spelled as the cheapest calls
of the same ops.

A step's graph calls views (reshapes and permutes around every GEMM),
GEMMs, convolutions and attention between its regions; hundreds a
training step. FX spells each as `torch.ops.aten.view.default(x, size)`,
whose Python OpOverload layer costs as much as the view itself: on an
H200 machine's host, aten.view.default 2.9 us and aten.permute.default
3.7 us a call. The Tensor methods (`x.view(size)`) and torch functions
(`torch.mm`) call the same ATen ops through torch's C++ argument parser,
with the same results and without that layer (on a CPU-only development
host, aten.view.default took 1.8 us a call and `x.view` 0.7 to 1.1 us).
This pass respells them in the final graph, after every pass that reads
the nodes' targets; steps whose host is slower than their GPU go that
much faster."""

import torch

from .graph_edits import finish_rewrite

aten = torch.ops.aten

# Views as the Tensor method of the same op and argument order.
_AS_METHOD = {
    aten.view.default: "view",
    aten.permute.default: "permute",
    aten.transpose.int: "transpose",
    aten.t.default: "t",
    aten.unsqueeze.default: "unsqueeze",
    aten.squeeze.dim: "squeeze",
    aten.squeeze.dims: "squeeze",
    aten.squeeze.default: "squeeze",
    aten.expand.default: "expand",
    aten.select.int: "select",
    aten.as_strided.default: "as_strided",
}
# GEMMs and convolutions as the torch function of the same op and
# argument order.
_AS_FUNCTION = {
    aten.mm.default: torch.mm,
    aten.addmm.default: torch.addmm,
    aten.bmm.default: torch.bmm,
    aten.baddbmm.default: torch.baddbmm,
    aten.convolution.default: torch.convolution,
}


def respell_host_calls(gm):
    """Respells `gm`'s view and GEMM calls (see the module); True when it
    changed the graph. The nodes keep their meta values."""
    edits = [_respell(node) for node in gm.graph.nodes if node.op == "call_function"]
    return finish_rewrite(gm, any(edits))


def _respell(node):
    if node.target in _AS_METHOD:
        node.op, node.target = "call_method", _AS_METHOD[node.target]
        return True
    if node.target in _AS_FUNCTION:
        node.target = _AS_FUNCTION[node.target]
        return True
    return False
