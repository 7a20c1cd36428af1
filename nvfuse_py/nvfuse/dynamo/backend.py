"""The torch.compile backend: Dynamo's graph goes through AOTAutograd
(forward and backward graphs in ATen, decomposed to ops nvfuse fuses),
torch's capability-based partitioner cuts each graph into fusible regions,
and each region runs as nvfuse fusions; everything else stays the ATen call
it was.

    torch.compile(model, backend="nvfuse")
    torch.compile(model, backend=nvfuse.dynamo.backend)
    torch.compile(model, backend="nvfuse", options={"dump": True})
    torch.compile(model, backend="nvfuse", mode="reduce-overhead")  # CUDA graphs
"""

import functools
import os
import sys
from dataclasses import dataclass, field

import torch
from torch._dynamo.backends.common import aot_autograd
from torch.fx.graph import _BoxedCodeGen
from torch.fx.node import _get_qualified_name
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner

from .cuda_graphs import CudaGraphCompilers
from .region import FusedRegion
from .support import NvfuseSupport
from .translate import VIEWS

OPTIONS = {
    "dump": "print each compiled graph's report (also NVFUSE_DUMP=dynamo)",
    "cuda_graphs": "record each compiled graph's launches as CUDA graphs and replay "
    'them (also mode="reduce-overhead")',
}

# torch.compile's modes, as the options they stand for here.
MODES = {
    "default": {},
    "reduce-overhead": {"cuda_graphs": True},
    "max-autotune": {},
    "max-autotune-no-cudagraphs": {},
}


@dataclass
class GraphReport:
    """What one compiled graph became: its fusions (name and the ATen ops
    in each) and the nodes left to ATen with the reason."""

    kind: str
    fusions: list = field(default_factory=list)
    unfused: list = field(default_factory=list)

    def __str__(self):
        lines = [
            f"nvfuse {self.kind} graph: {len(self.fusions)} fusions, {len(self.unfused)} ATen calls"
        ]
        for name, ops in self.fusions:
            lines.append(f"  {name}: {', '.join(ops)}")
        for node, target, reason in self.unfused:
            lines.append(f"  ATen {node} ({target}): {reason}")
        return "\n".join(lines)


_REPORTS = []


def reports():
    """The reports of the graphs compiled so far in this process, oldest
    first."""
    return list(_REPORTS)


def clear_reports():
    _REPORTS.clear()


def _fusible_regions(gm, support):
    partitioner = CapabilityBasedPartitioner(
        gm,
        support,
        allows_single_node_partition=False,
        non_compute_ops=[_get_qualified_name(v) for v in VIEWS],
    )
    partitions = partitioner.propose_partitions()
    partitioner.remove_bookend_non_compute_ops(partitions)
    partitions = [p for p in partitions if p.size() > 0]
    return partitioner.fuse_partitions(partitions, prefix="nvfuse_")


def compile_graph(gm, example_inputs, kind, dump=False):
    """`gm` (an ATen graph from AOTAutograd) with its fusible regions run
    by nvfuse, as a boxed function."""
    support = NvfuseSupport()
    fused = _fusible_regions(gm, support)
    report = GraphReport(kind)
    for name, child in list(fused.named_children()):
        if name.startswith("nvfuse_"):
            region = FusedRegion(child, name)
            setattr(fused, name, region)
            report.fusions.append((name, region.node_targets()))
    for node in fused.graph.nodes:
        if node.op == "call_function" and node.name in support.reasons:
            target, reason = support.reasons[node.name]
            report.unfused.append((node.name, target, reason))
    _REPORTS.append(report)
    if dump or "dynamo" in os.environ.get("NVFUSE_DUMP", "").split(","):
        print(report, file=sys.stderr)
    return _boxed(fused)


def _boxed(graph_module):
    """The graph as AOTAutograd's boxed function: it takes its inputs as
    one list and empties it, so each input (a saved activation, in a
    backward) is freed after its last use rather than when the step ends;
    CUDA-graph trees require this too."""
    graph_module.graph.set_codegen(_BoxedCodeGen())
    graph_module.recompile()
    forward = graph_module.forward

    def run(args):
        return forward(args)

    run._boxed_call = True
    return run


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
]


def decompositions():
    """The decompositions applied before partitioning: torch's core ATen
    set plus FUSIBLE_COMPOSITES (layer and RMS norms, softmax, GELU, SiLU,
    losses and their backwards become the pointwise ops and reductions
    nvfuse fuses); matmuls, convolutions and attention stay whole (torch's
    decomposition of CPU flash attention also gets the causal backward
    wrong)."""
    table = {
        op: fn
        for op, fn in torch._decomp.core_aten_decompositions().items()
        if "scaled_dot_product" not in str(op)
    }
    packets = [getattr(torch.ops.aten, n) for n in FUSIBLE_COMPOSITES if hasattr(torch.ops.aten, n)]
    table.update(torch._decomp.get_decompositions(packets))
    return table


def _partition_fn():
    try:
        import networkx  # noqa: F401 (the min-cut partitioner needs it)
    except ImportError:
        from torch._functorch.partitioners import default_partition

        return default_partition
    from torch._functorch.partitioners import min_cut_rematerialization_partition

    return min_cut_rematerialization_partition


def _check_options(options):
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        from ..errors import DefinitionError

        known = ", ".join(f"{k} ({v})" for k, v in OPTIONS.items())
        raise DefinitionError(
            f"nvfuse backend: unknown option(s) {', '.join(unknown)}; known: {known}"
        )


def _options_of(options, kwargs):
    options = dict(options or {}, **kwargs)
    mode = options.pop("mode", None) or "default"
    if mode not in MODES:
        from ..errors import DefinitionError

        raise DefinitionError(f"nvfuse backend: unknown mode {mode!r}; known: {', '.join(MODES)}")
    _check_options(options)
    return {**MODES[mode], **options}


def backend(gm, example_inputs, options=None, **kwargs):
    """torch.compile's backend="nvfuse": `options` (torch.compile's
    `options=`) or keyword arguments, see OPTIONS; torch.compile's `mode`
    as MODES says."""
    options = _options_of(options, kwargs)
    dump = bool(options.get("dump", False))

    def compile_kind(graph, inputs, kind):
        return compile_graph(graph, inputs, kind, dump=dump)

    if options.get("cuda_graphs", False):
        graphs = CudaGraphCompilers(compile_kind, len(example_inputs))
        forward, backward, inference = graphs.forward, graphs.backward, graphs.inference
    else:
        forward, backward, inference = (
            functools.partial(compile_kind, kind=kind)
            for kind in ("forward", "backward", "inference")
        )

    return aot_autograd(
        fw_compiler=forward,
        bw_compiler=backward,
        inference_compiler=inference,
        decompositions=decompositions(),
        partition_fn=_partition_fn(),
        keep_inference_input_mutations=True,
    )(gm, example_inputs)
