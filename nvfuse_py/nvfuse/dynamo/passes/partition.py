"""Cuts an ATen graph into the regions nvfuse runs: torch's
CapabilityBasedPartitioner proposes the largest connected sets of nodes
nvfuse takes (support.py), unsafe in-place updates leave their proposals
(in_place_updates.py), views at a region's edges stay outside it (they
cost nothing in eager) while the getitems of its multi-valued nodes stay
inside, and each remaining proposal of at least two
computing nodes becomes a submodule `nvfuse_<k>` called where the
region's last output was."""

import operator

from torch.fx.node import _get_qualified_name
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner

from ..translate import VIEWS
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
    return partitioner, [p for p in partitions if _computing_nodes(p) >= 2]


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
