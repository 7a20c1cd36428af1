"""One ATen graph from AOTAutograd through the backend's passes
(passes/__init__.py lists them): patch convolutions run as GEMMs,
convolutions made channels-last (when asked), 1x1 convolutions of
channels-last images run as GEMMs, the other convolutions' weights made
channels-last by one launch, reductions split into ones kernels
take, reciprocal square roots folded, max pooling without indices
written as slices, views moved above casts, gathers moved below pointwise ops,
one-hot scatters rewritten as comparisons and their sums as numbers,
reshapes moved below elementwise ops, dead buffers written in place,
input updates marked, fusible regions partitioned and installed as
nvfuse fusions, unaligned GEMMs padded, the graph's report, chains of
views folded into one call each, and the ATen calls left spelled as
their cheapest Python calls."""

import sys

from ..dumps import get_dump

from .graph_outputs import user_only_outputs
from .passes.channels_last import run_convolutions_channels_last
from .passes.convolution_biases import move_convolution_biases_into_regions
from .passes.dead_gemm_results import write_into_dead_gemm_results
from .passes.donated_buffers import donated_indices, was_undone, write_into_donated_buffers
from .passes.empty_operands import drop_empty_operands
from .passes.gather_through_pointwise import push_gathers_through_pointwise
from .passes.gemm_alignment import pad_unaligned_gemms
from .passes.graph_edits import recompiles_deferred
from .passes.host_calls import respell_host_calls
from .passes.in_place_updates import mark_in_place_updates
from .passes.max_pool_slices import rewrite_max_pools
from .passes.one_hot_scatters import rewrite_one_hot_scatters
from .passes.one_hot_sums import rewrite_one_hot_sums
from .passes.patch_convolutions import rewrite_patch_convolutions
from .passes.pixel_convolutions import rewrite_pixel_convolutions
from .passes.reciprocal_square_roots import fold_reciprocal_square_roots
from .passes.relu_before_rounding import move_relus_before_roundings
from .passes.sigmoid_forms import fold_sigmoids
from .passes.partition import partition_regions
from .passes.regions import install_regions
from .passes.split_reductions import split_reductions
from .passes.views_after_pointwise import move_views_after_pointwise
from .passes.view_chains import fold_view_chains
from .passes.views_before_casts import move_views_before_casts
from .passes.weight_layouts import group_weight_layouts
from .report import report_graph
from .support import NvfuseSupport

_REPORTS = []


def reports():
    """The reports of the graphs compiled so far in this process, oldest
    first."""
    return list(_REPORTS)


def clear_reports():
    _REPORTS.clear()


def compile_graph(gm, example_inputs, kind, dump=False, channels_last="auto", write_donated=True):
    """`gm` (an ATen graph from AOTAutograd) with its fusible regions run
    by nvfuse, as a boxed function; `channels_last`: the backend's option
    of that name (True, False or "auto"); `write_donated`: whether a
    backward may write its results into the saved activations AOTAutograd
    donated to it (not under CUDA graphs: torch records no graph that
    mutates an input other than a parameter)."""
    with recompiles_deferred():  # _boxed generates the final graph's code
        fused = _rewritten(gm, example_inputs, kind, dump, channels_last, write_donated)
    return _boxed(fused)


def _rewritten(gm, example_inputs, kind, dump, channels_last, write_donated):
    """`gm` through every pass, its regions installed and its report made
    (compile_graph's arguments)."""
    drop_empty_operands(gm)
    rewrite_patch_convolutions(gm)
    run_convolutions_channels_last(gm, example_inputs, kind, when=channels_last)
    rewrite_pixel_convolutions(gm)
    group_weight_layouts(gm)
    move_convolution_biases_into_regions(gm)
    split_reductions(gm)
    fold_reciprocal_square_roots(gm)
    fold_sigmoids(gm)
    rewrite_max_pools(gm)
    move_relus_before_roundings(gm)  # after: the pooling takes a relu it alone reads
    move_views_before_casts(gm)
    push_gathers_through_pointwise(gm)
    rewrite_one_hot_scatters(gm)
    rewrite_one_hot_sums(gm)
    move_views_after_pointwise(gm)
    if kind == "backward" and write_donated:
        write_into_donated_buffers(gm, donated_indices())
    write_into_dead_gemm_results(gm)
    mark_in_place_updates(gm)
    nodes = list(gm.graph.nodes)
    support = NvfuseSupport()
    fused, region_nodes = partition_regions(gm, support)
    nodes = [n for n in nodes if not was_undone(n)]  # no ATen call of the graph
    regions = install_regions(fused)
    report = report_graph(kind, nodes, regions, region_nodes, support.reasons)
    report.padded_gemms = pad_unaligned_gemms(fused, user_outputs=user_only_outputs(fused, kind))
    _REPORTS.append(report)
    if dump or "dynamo" in get_dump():
        print(report, file=sys.stderr)
    fold_view_chains(fused, example_inputs)
    respell_host_calls(fused)
    return fused


def _boxed(graph_module):
    """The graph as AOTAutograd's boxed function: it takes its inputs as
    one list and empties it, so each input (a saved activation, in a
    backward) is freed after its last use rather than when the step ends;
    CUDA-graph trees require this too."""
    from torch.fx.graph import _BoxedCodeGen

    graph_module.graph.set_codegen(_BoxedCodeGen())
    graph_module.recompile()
    forward = graph_module.forward

    def run(args):
        return forward(args)

    run._boxed_call = True
    return run
