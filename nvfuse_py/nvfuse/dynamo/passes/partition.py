"""Cuts an ATen graph into the regions nvfuse runs: torch's
CapabilityBasedPartitioner's walk (region_proposals.py walks it faster)
proposes the largest connected sets of nodes nvfuse takes (support.py),
unsafe in-place updates leave their proposals (in_place_updates.py),
views at a region's edges stay outside it (they cost nothing in eager)
while the getitems of its multi-valued nodes stay inside, and each
remaining proposal of at least two computing nodes becomes a submodule
`nvfuse_<k>` called where the region's last output was. A cast only the
graph's output reads, and an input update with the work only it reads,
join the region of their source. Writes into donated buffers and dead
GEMM results that would not happen in place are undone
(donated_buffers.py)."""

import operator

import torch
from torch.fx.node import _get_qualified_name
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner

from ..translate import VIEWS
from .donated_buffers import ELEMENTWISE, undo_unfused_buffer_writes
from .graph_edits import is_plain_cast
from .in_place_updates import is_input_update, keep_in_place_updates_safe
from .region_proposals import propose_partitions

aten = torch.ops.aten


def propose_regions(gm, support):
    """The partitioner and its proposal for `gm` (sets of nodes, not yet
    fused)."""
    partitioner = CapabilityBasedPartitioner(
        gm,
        support,
        allows_single_node_partition=False,
        non_compute_ops=[_get_qualified_name(v) for v in VIEWS if v is not operator.getitem],
    )
    partitions = keep_in_place_updates_safe(propose_partitions(partitioner), support.reasons)
    proposed = [n for p in partitions for n in p.nodes]
    partitioner.remove_bookend_non_compute_ops(partitions)
    for partition in partitions:
        _take_every_item(partition)
    _tails_join_their_source(partitions)
    _keep_edge_broadcasts(partitions, proposed)
    undo_unfused_buffer_writes(gm, partitions)
    return partitioner, [p for p in partitions if _computing_nodes(p) >= 2]


# Views that only add, drop or broadcast axes of size one: a fusion reads
# their input as it is and broadcasts in its kernel.
_BROADCAST_VIEWS = {
    aten.unsqueeze.default,
    aten.squeeze.dim,
    aten.squeeze.dims,
    aten.squeeze.default,
    aten.expand.default,
    aten.view.default,
    aten.reshape.default,
    aten._unsafe_view.default,
    aten.alias.default,
}


# Views that name the axes of size one they add or drop.
_AXIS_VIEWS = {
    aten.unsqueeze.default,
    aten.squeeze.dim,
    aten.squeeze.dims,
    aten.squeeze.default,
}
_REDUCTIONS = {
    aten.var_mean.correction,
    aten.var.correction,
    aten.sum.dim_IntList,
    aten.mean.dim,
    aten.amax.default,
    aten.amin.default,
}


def _keep_edge_broadcasts(partitions, proposed):
    """Takes back into the regions the views at their edges (`proposed`,
    then removed as bookends) that only reshape axes of size one or
    broadcast: batch norm's [C] weight and bias viewed [C, 1, 1], its
    statistics viewed [1, C, 1, 1] and back for the backward, a pooled
    gradient viewed and expanded over H and W. Outside, each is a call of
    its own on the host (about 4 us an ATen view on the H200 machines'
    host; a ResNet-50 training step made 371 of them).

    - At a region's start, a view one region alone reads joins it: the
      fusion reads the view's input and broadcasts in its kernel. Users
      come before the views they read (reverse graph order), so that
      chains come back whole.
    - At its end, an unsqueeze or squeeze of a reduction's statistics
      (directly, through such views, or through elementwise ops of
      statistics alone: batch norm's saved `rsqrt(var + eps)`) joins the
      region where the region's value has no other reader outside: the
      region returns the view's shape instead, no more outputs than
      before. Other views at
      the end stay outside: returning a squeeze of T5's position bias (a
      sum, not a reduction) cut its fusions into more kernels, and so did
      a view of GPT-2's bias gradients (tools/zoo_kernels_check.py: 51
      -> 62 and 26 -> 36 kernels on their tiny training steps)."""
    owner = {node: p for p in partitions for node in p.nodes}
    statistics = {}  # memo of _is_statistic over this graph
    for node in reversed(proposed):
        if node in owner or not _is_broadcast_view(node):
            continue
        readers = {owner.get(u) for u in node.users}
        if len(readers) == 1 and None not in readers:
            _take(node, readers.pop(), owner)
    for node in proposed:
        source = owner.get(node.args[0]) if node.op == "call_function" else None
        if node in owner or source is None or node.target not in _AXIS_VIEWS:
            continue
        alone = all(u is node or owner.get(u) is source for u in node.args[0].users)
        if alone and _is_statistic(node.args[0], statistics):
            _take(node, source, owner)


def _take(node, partition, owner):
    partition.add_node(node)
    owner[node] = partition


# How many elementwise ops deep a statistic may lie below the view and
# still count as one: batch norm's inverse deviation is two (add, rsqrt).
# The walk stops there rather than follow a long chain back to its start.
_STATISTIC_STEPS = 16


def _is_statistic(node, memo, steps=_STATISTIC_STEPS):
    """Whether `node` is a reduction's value, through axis views, the items
    of a var_mean, and elementwise ops whose tensor operands are all
    statistics. `memo` holds the answers for nodes already asked, so that a
    chain whose ops read the op before more than once is walked once; an
    answer found with fewer steps left can be a False the full walk would
    not give, which only keeps a view outside."""
    while node.op == "call_function" and (
        node.target in _AXIS_VIEWS or node.target is operator.getitem
    ):
        node = node.args[0]
    if node.op != "call_function":
        return False
    if node.target in _REDUCTIONS:
        return True
    if node.target not in ELEMENTWISE or steps == 0:
        return False
    if node not in memo:
        operands = node.all_input_nodes
        memo[node] = bool(operands) and all(_is_statistic(o, memo, steps - 1) for o in operands)
    return memo[node]


def _is_broadcast_view(node):
    if node.op != "call_function" or node.target not in _BROADCAST_VIEWS:
        return False
    source, result = node.args[0], node.meta.get("val")
    operand = source.meta.get("val") if isinstance(source, torch.fx.Node) else None
    if not isinstance(operand, torch.Tensor) or not isinstance(result, torch.Tensor):
        return False
    if node.target is aten.expand.default:
        return True
    return [s for s in operand.shape if s != 1] == [s for s in result.shape if s != 1]


def _tails_join_their_source(partitions):
    """What a region computes only for the graph's end from another
    region's values joins that region, as more outputs of its kernels:

    - a cast that only the graph's output reads (a saved activation: a
      layer norm's mean and rstd cast to the model's dtype for the
      backward);
    - an input update with the work only it reads (batch norm's running
      statistics, `running * 0.9 + mean * 0.1` copied into the buffer).

    The partitioner merges regions with no path between them too: it put
    BERT's twelve saved casts in the loss's region and every batch norm's
    running-statistics update of a ResNet in one region at the forward's
    end, each a kernel of its own (four per batch norm). A tail moves only
    when everything it reads outside itself is a graph input or the
    source region's value, directly or through views (which move with it),
    so the source gains no new dependency and no cycle can form."""
    owner = {node: p for p in partitions for node in p.nodes}
    position = {}  # of every node in the graph, filled on the first tail
    for partition in partitions:
        for end in [n for n in partition.nodes if _ends_a_tail(n)]:
            if owner.get(end) is not partition:
                continue  # moved with an earlier tail
            tail = _tail_of(end, partition)
            if tail is None:
                continue
            found = _single_source(tail, owner)
            if found is None or found[0] is partition:
                continue
            source, views = found
            if is_input_update(end) and any(u in source.nodes for u in end.args[0].users):
                continue  # the source reads the old value: keep_in_place_updates_safe's case
            if any(_costly_as_output(v, tail, source) for v in views):
                continue
            if not position:
                position.update((n, i) for i, n in enumerate(end.graph.nodes))
            for node in views + sorted(tail, key=position.__getitem__):
                if owner.get(node) is not None:
                    owner[node].remove_node(node)
                source.add_node(node)
                owner[node] = source


# A moved view that nodes outside the region still read becomes one more
# output of the region's kernel, a write of its elements. Up to this many
# elements (2 MB of bf16, under a microsecond of an H200's bandwidth) that
# write costs less than the launch the move saves; a batch norm's [C]
# statistics are far below it, a model's activations above.
_CHEAP_VIEW_OUTPUT_ELEMENTS = 1 << 20


def _costly_as_output(view, tail, source):
    read_outside = any(u not in tail and u not in source.nodes for u in view.users)
    value = view.meta.get("val")
    numel = value.numel() if hasattr(value, "numel") else None
    return read_outside and (numel is None or numel > _CHEAP_VIEW_OUTPUT_ELEMENTS)


def _ends_a_tail(node):
    # Writes into dead GEMM results are no graph input's update: their
    # buffer is a node of the graph, which a tail may not read.
    return (is_input_update(node) and node.args[0].op == "placeholder") or (
        is_plain_cast(node) and all(u.op == "output" for u in node.users)
    )


def _tail_of(end, partition):
    """`end` and the nodes of its region it reads, directly or not, when
    nothing else in the region reads them; else None."""
    tail = {end}
    frontier = [end]
    while frontier:
        node = frontier.pop()
        for operand in node.all_input_nodes:
            if operand in partition.nodes and operand not in tail:
                tail.add(operand)
                frontier.append(operand)
    for node in tail:
        if node is not end and any(u in partition.nodes and u not in tail for u in node.users):
            return None
    return tail


def _single_source(tail, owner):
    """(the one region whose values `tail` reads besides graph inputs, the
    region-less views it reads them through), or None."""
    sources, views = set(), []
    for node in tail:
        for operand in node.all_input_nodes:
            if operand in tail:
                continue
            while (
                operand.op == "call_function" and operand not in owner and operand.target in VIEWS
            ):
                views.append(operand)
                operand = operand.args[0]
            if operand.op in ("placeholder", "get_attr"):
                continue
            if operand not in owner:
                return None  # an ATen op's result: the source would wait for it
            sources.add(owner[operand])
    if len(sources) != 1:
        return None
    return sources.pop(), list(dict.fromkeys(views))


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
