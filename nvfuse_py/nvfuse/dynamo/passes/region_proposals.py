"""The regions torch's CapabilityBasedPartitioner proposes, found faster.

`propose_partitions` walks the graph from its last node to its first; each
supported node starts a partition, and every partition found so far is
merged into it in order unless the merge would make a cycle (a path that
leaves the merged partition and comes back). Its cycle check walks, in
Python, every node downstream of every user of the two partitions, once
per user: quadratic in the graph's size per check, and it checks about
once per (node, partition) pair. On a ResNet-50 training step's graphs
that was 190,000 checks and 10 of the 26 seconds of the step's first call
on a 2-core host.

This is the same walk and the same merges; the check asks the same
question the other way round, of bit masks over the graph's nodes. A
node downstream of a user is in the merged partition exactly when the
user is among what the partition's nodes depend on; a partition holding
such a node is one whose nodes depend on a user. So each partition keeps
masks of its nodes, its users and what its nodes depend on (unions as
partitions merge), and the partitions that reach it (torch's map, kept
by id as torch keeps it); a check is a few big-integer ANDs. On those
graphs the proposals took 0.4 s. They are those torch's partitioner
gives (a test compares them on the model zoo's graphs)."""

import collections
import itertools
import operator

from torch.fx.node import _get_qualified_name
from torch.fx.passes.infra.partitioner import Partition


class _Proposal:
    """The walk's state: partitions by id, each node's partition, and per
    partition its nodes, its users and what its nodes depend on as bit
    masks over the graph's nodes, and the partitions it reaches."""

    def __init__(self, graph):
        self.bit = {node: 1 << i for i, node in enumerate(graph.nodes)}
        self.upstream = {}  # node -> mask of the nodes it depends on
        for node in graph.nodes:
            mask = 0
            for source in node.all_input_nodes:
                mask |= self.upstream[source] | self.bit[source]
            self.upstream[node] = mask
        self.by_id = {}
        self.assignment = {}
        self.order = {}  # partition id -> its first node's position in the walk
        self.nodes = {}  # partition id -> mask of its nodes
        self.users = {}  # partition id -> mask of its nodes' users
        self.depends = {}  # partition id -> mask of what its nodes depend on
        # The partitions each reaches, by id as torch keeps them (an id
        # merged away stays where it was), and the reverse.
        self.reaches = collections.defaultdict(set)
        self.reached_by = collections.defaultdict(set)

    def add(self, node, position, pid):
        """`node` into partition `pid` (a new one when `pid` is new);
        None takes it out of its partition."""
        if node in self.assignment:
            self.by_id[self.assignment[node]].remove_node(node)
        if pid is None:
            self.assignment.pop(node)
        elif pid not in self.by_id:
            self.assignment[node] = pid
            self.by_id[pid] = Partition(id=pid, nodes=[node], node_orders=[position])
            self.nodes[pid] = self.bit[node]
            self.users[pid] = sum(self.bit[user] for user in node.users)
            self.depends[pid] = self.upstream[node]
            for user in node.users:
                target = self.assignment.get(user)
                if target is not None:
                    self.reaches[pid].add(target)
                    self.reaches[pid].update(self.reaches[target])
            for target in self.reaches[pid]:
                self.reached_by[target].add(pid)
        else:
            self.assignment[node] = pid
            self.by_id[pid].add_node(node, position)

    def makes_cycle(self, users, a, b):
        """Whether a path from `users` (a mask of users of partitions `a`
        and `b`, outside both) leads back into either: to one of their
        nodes, or to a partition that reaches either. torch's partitioner
        walks every node downstream of each user; the same question is
        which users those nodes depend on."""
        if users & (self.depends[a] | self.depends[b]):
            return True
        return any(users & self.depends[p] for p in self.reached_by[a] | self.reached_by[b])

    def merge(self, a, b):
        """Partition `b` merged with `a` unless that makes a cycle; returns
        the id of the partition `a`'s nodes are in afterwards."""
        users = (self.users[a] | self.users[b]) & ~(self.nodes[a] | self.nodes[b])
        if self.makes_cycle(users, a, b):
            return a
        a_nodes, b_nodes = self.by_id[a].nodes, self.by_id[b].nodes
        kept, removed = (b, a) if len(a_nodes) < len(b_nodes) else (a, b)
        self.by_id[kept].nodes.update(self.by_id[removed].nodes)
        for node in self.by_id[removed].nodes:
            self.assignment[node] = kept
        del self.by_id[removed]
        self.order[kept] = min(self.order[kept], self.order.pop(removed))
        self.nodes[kept] |= self.nodes.pop(removed)
        self.depends[kept] |= self.depends.pop(removed)
        self.users[kept] = users
        del self.users[removed]
        for target in self.reaches[removed]:
            self.reached_by[target].discard(removed)
            self.reached_by[target].add(kept)
        self.reaches[kept] = self.reaches[kept].union(self.reaches.pop(removed))
        return kept


def _is_getitem(node):
    return node.op == "call_function" and _get_qualified_name(node.target) == "_operator.getitem"


def _getitems_join_their_source(graph, proposal):
    """The getitems of a node that only getitems read go to the node's
    partition, until none moves (getitems of getitems)."""
    while True:
        moves = {}
        for node in graph.nodes:
            if all(_is_getitem(user) for user in node.users):
                pid = proposal.assignment.get(node)
                for user in node.users:
                    if proposal.assignment.get(user) != pid:
                        moves[user] = pid
        if not moves:
            return
        for node, pid in moves.items():
            proposal.add(node, None, pid)


def _computing_node_count(partitioner, partition):
    non_compute = {"torch.ops.aten.view", "_operator.getitem", *partitioner.non_compute_ops}
    count = 0
    for node in partition.nodes:
        if node.op == "call_function":
            name = _get_qualified_name(node.target)
            count += name not in non_compute
            count += name in partitioner.allowed_single_node_partition_ops
    return count


def propose_partitions(partitioner):
    """`partitioner.propose_partitions()` (a CapabilityBasedPartitioner's):
    the same partitions, in the same order, with their nodes in the same
    order."""
    graph = partitioner.graph_module.graph
    proposal = _Proposal(graph)
    new_id = itertools.count()
    for position, node in enumerate(reversed(graph.nodes)):
        candidates = {}
        if partitioner._is_node_supported(node) and node not in proposal.assignment:
            pid = next(new_id)
            proposal.order[pid] = pid
            proposal.add(node, position, pid)
            candidates[pid] = None
        for pid, _ in sorted(proposal.order.items(), key=operator.itemgetter(1)):
            candidates[pid] = None
        ids = list(candidates)
        if len(ids) > 1:
            merged = ids[0]
            for other in ids[1:]:
                merged = proposal.merge(merged, other)
    for partition in proposal.by_id.values():
        partition.nodes = dict(
            sorted(partition.nodes.items(), key=operator.itemgetter(1), reverse=True)
        )
    _getitems_join_their_source(graph, proposal)
    if not partitioner.allows_single_node_partition:
        for pid in [
            pid
            for pid, partition in proposal.by_id.items()
            if _computing_node_count(partitioner, partition) <= 1
        ]:
            del proposal.by_id[pid]
    return [partition for partition in proposal.by_id.values() if partition.size() > 0]
