"""Cuts an ATen graph into the regions nvfuse runs: torch's
CapabilityBasedPartitioner proposes the largest connected sets of nodes
nvfuse takes (support.py), unsafe in-place updates leave their proposals
(in_place_updates.py), views at a region's edges stay outside it (they
cost nothing in eager) while the getitems of its multi-valued nodes stay
inside, and each remaining proposal of at least two
computing nodes becomes a submodule `nvfuse_<k>` called where the
region's last output was. A cast only the graph's output reads joins
the region of its source."""

import operator

from torch.fx.node import _get_qualified_name
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner

from ..translate import VIEWS
from .graph_edits import is_plain_cast
from .in_place_updates import keep_in_place_updates_safe


def propose_regions(gm, support):
    """The partitioner and its proposal for `gm` (sets of nodes, not yet
    fused)."""
    partitioner = CapabilityBasedPartitioner(
        gm,
        support,
        allows_single_node_partition=False,
        non_compute_ops=[_get_qualified_name(v) for v in VIEWS if v is not operator.getitem],
    )
    partitions = keep_in_place_updates_safe(partitioner.propose_partitions(), support.reasons)
    partitioner.remove_bookend_non_compute_ops(partitions)
    for partition in partitions:
        _take_every_item(partition)
    _saved_casts_join_their_source(partitions)
    return partitioner, [p for p in partitions if _computing_nodes(p) >= 2]


def _saved_casts_join_their_source(partitions):
    """A cast that only the graph's output reads (a saved activation: a
    layer norm's mean and rstd cast to the model's dtype for the backward)
    joins the region that computes what it casts, as one more output of
    that region's kernel. The partitioner merges regions with no path
    between them too, and put BERT's twelve such casts in the loss's
    region, where each was a kernel of its own. The graph's output is the
    cast's only reader, so the move makes no cycle."""
    owner = {node: p for p in partitions for node in p.nodes}
    for partition in partitions:
        for node in list(partition.nodes):
            if not is_plain_cast(node) or any(u.op != "output" for u in node.users):
                continue
            source = owner.get(node.args[0])
            if source is None or source is partition:
                continue
            partition.remove_node(node)
            source.add_node(node)
            owner[node] = source


def _take_every_item(partition):
    """A region returns tensors, not tuples: the getitems of a node with
    several values (var_mean, split) join its region."""
    for node in list(partition.nodes):
        if isinstance(node.meta.get("val"), (tuple, list)):
            for user in node.users:
                if user.target is operator.getitem:
                    partition.add_node(user)


def _computing_nodes(partition):
    return sum(1 for n in partition.nodes if n.target not in VIEWS)


def partition_regions(gm, support):
    """`gm` with each fusible region made a submodule named `nvfuse_<k>`,
    and the proposal's node sets (for the report)."""
    partitioner, partitions = propose_regions(gm, support)
    node_sets = [set(p.nodes) for p in partitions]
    return partitioner.fuse_partitions(partitions, prefix="nvfuse_"), node_sets
