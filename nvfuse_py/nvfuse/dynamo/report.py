"""What one compiled graph became: its fusions (name and the ATen ops in
each), the nodes left to ATen with the reason, and how many of the
graph's non-GEMM ops nvfuse ran (GEMMs, convolutions and attention run as
ATen calls by design; views and getitems are not counted)."""

import operator
from dataclasses import dataclass, field

import torch

from .passes.in_place_updates import in_place_updates_done
from .passes.weight_layouts import copy_into_layouts
from .translate import VIEWS

aten = torch.ops.aten

# Ops that run as ATen calls by design (cuBLAS, cuDNN, flash attention),
# with the reason the report gives.
GEMM_LIKE = {
    aten.mm.default,
    aten.addmm.default,
    aten.bmm.default,
    aten.baddbmm.default,
    aten.matmul.default,
    aten.convolution.default,
    aten.convolution_backward.default,
    aten._scaled_dot_product_flash_attention.default,
    aten._scaled_dot_product_flash_attention_backward.default,
    aten._scaled_dot_product_efficient_attention.default,
    aten._scaled_dot_product_efficient_attention_backward.default,
    aten._scaled_dot_product_cudnn_attention.default,
    aten._scaled_dot_product_cudnn_attention_backward.default,
    aten._scaled_dot_product_flash_attention_for_cpu.default,
    aten._scaled_dot_product_flash_attention_for_cpu_backward.default,
}
GEMM_REASON = "a GEMM, convolution or attention: runs as its ATen call (cuBLAS, cuDNN)"
LONE_REASON = "the only computing op of its region: as fast as its ATen call"


def counts_as_op(node):
    """Whether `node` is one of the graph's non-GEMM ops."""
    return (
        node.op == "call_function"
        and node.target not in VIEWS
        and node.target not in GEMM_LIKE
        and node.target is not operator.getitem
        and node.target is not in_place_updates_done
        # The convolutions' weight conversions, which cuDNN made inside
        # its calls before: part of the convolutions, run by nvfuse.
        and node.target is not copy_into_layouts
    )


@dataclass
class GraphReport:
    """`fused_ops` of the graph's `non_gemm_ops` ran in nvfuse."""

    kind: str
    fusions: list = field(default_factory=list)
    unfused: list = field(default_factory=list)
    fused_ops: int = 0
    non_gemm_ops: int = 0
    padded_gemms: int = 0

    def __str__(self):
        share = f"{self.fused_ops} of {self.non_gemm_ops} non-GEMM ops in nvfuse"
        if self.padded_gemms:
            share += f"; {self.padded_gemms} GEMMs padded to aligned sizes"
        lines = [
            f"nvfuse {self.kind} graph: {len(self.fusions)} fusions, "
            f"{len(self.unfused)} ATen calls; {share}"
        ]
        for name, ops in self.fusions:
            lines.append(f"  {name}: {', '.join(ops)}")
        for node, target, reason in self.unfused:
            lines.append(f"  ATen {node} ({target}): {reason}")
        return "\n".join(lines)


def report_graph(kind, nodes, regions, region_nodes, reasons):
    """The report of a graph of `nodes` (as they were before
    partitioning), cut into `region_nodes` (node sets, one a region) run by
    `regions`; `reasons` maps the name of each node nvfuse refused to
    (target, reason)."""
    report = GraphReport(kind)
    report.fusions = [(r.name, r.node_targets()) for r in regions]
    fused = set().union(*region_nodes) if region_nodes else set()
    for node in nodes:
        if node.op == "call_function" and node.target in GEMM_LIKE:
            report.unfused.append((node.name, str(node.target), GEMM_REASON))
        elif counts_as_op(node):
            report.non_gemm_ops += 1
            if node in fused:
                report.fused_ops += 1
            else:
                why = reasons.get(node.name, (str(node.target), LONE_REASON))
                report.unfused.append((node.name, *why))
    return report
