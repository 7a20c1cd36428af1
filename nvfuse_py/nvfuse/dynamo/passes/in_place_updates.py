"""In-place updates of graph inputs: functionalization ends a graph with
`copy_(input, new_value)` for each input the model mutates (batch norm's
running statistics, a counter buffer, a cache). A region that computes
`new_value` can write it into the input itself (`add_output(value,
alias_input=input)`), which saves the separate copy kernel.

Two passes, one before the partitioner and one on its proposal:

- `mark_in_place_updates` gives the graph's input updates a user (a no-op
  marker before the output), so that a region holding one always has an
  output to return: the partitioner cannot place a region without one.
- `keep_in_place_updates_safe` takes an update out of its proposed region
  when another node outside the region reads the input (in the functional
  graph every such reader expects the old value, and the region may run
  before it) or when the region returns a view of the input (the view
  would show the new values)."""

import torch

from ..translate import VIEWS
from .donated_buffers import is_buffer_write

aten = torch.ops.aten


def is_input_update(node):
    """Whether `node` is functionalization's write-back into a graph
    input, or a pass's write into a buffer nothing reads afterwards (a
    GEMM's result, dead_gemm_results.py): a region's input either way,
    which its kernel writes in place."""
    return (
        node.op == "call_function"
        and node.target is aten.copy_.default
        and isinstance(node.args[0], torch.fx.Node)
        and (node.args[0].op == "placeholder" or is_buffer_write(node))
    )


def in_place_updates_done(*updated):
    """The marker's body: nothing to do, the updates happened."""
    return None


def mark_in_place_updates(gm):
    """Adds the marker node reading every input update that nothing reads;
    returns how many it marked."""
    graph = gm.graph
    unread = [n for n in graph.nodes if is_input_update(n) and not n.users]
    if unread:
        with graph.inserting_before(graph.output_node()):
            graph.call_function(in_place_updates_done, tuple(unread))
    return len(unread)


def _view_sources(node, seen=None):
    """The nodes whose memory `node` may share: itself, and through view
    ops, what it views."""
    seen = set() if seen is None else seen
    if node in seen:
        return seen
    seen.add(node)
    if node.op == "call_function" and node.target in VIEWS:
        for arg in node.all_input_nodes:
            _view_sources(arg, seen)
    return seen


def _outputs_of(nodes):
    return [n for n in nodes if any(user not in nodes for user in n.users)]


def _why_unsafe(update, nodes):
    target = update.args[0]
    if any(user is not update and user not in nodes for user in target.users):
        return "an input update whose input is read outside the region"
    if any(target in _view_sources(out) for out in _outputs_of(nodes) if out is not update):
        return "an input update whose region returns a view of the input"
    return None


def keep_in_place_updates_safe(partitions, reasons):
    """Takes every unsafe input update out of its partition (it then runs
    as the ATen copy_ it was, after the readers), with the reason in
    `reasons` (node name: (target, reason))."""
    for partition in partitions:
        # A pass's write into a buffer is undone as a whole where unsafe
        # (donated_buffers.undo_unfused_buffer_writes): out of its region
        # alone, it would sit between the region's nodes, a cycle.
        updates = [n for n in partition.nodes if is_input_update(n) and not is_buffer_write(n)]
        for update in updates:
            why = _why_unsafe(update, partition.nodes)
            if why is not None:
                partition.remove_node(update)
                reasons[update.name] = (str(update.target), why)
    return partitions
