"""Small edits the passes make to an ATen graph, each new node with the
meta value (a fake tensor) later passes and the regions read."""

import operator

import torch


def meta_of(value):
    """The meta value of a node, or None for a number or a node without one."""
    return value.meta.get("val") if isinstance(value, torch.fx.Node) else None


def insert_call(graph, anchor, target, args, kwargs=None):
    """A call of `target` inserted before `anchor`, its meta value computed
    from its operands'."""
    kwargs = kwargs or {}
    with graph.inserting_before(anchor):
        node = graph.call_function(target, args, kwargs)
    metas = torch.fx.node.map_arg((args, kwargs), lambda n: n.meta["val"])
    node.meta["val"] = target(*metas[0], **metas[1])
    return node


def insert_item(graph, anchor, node, index):
    """`node[index]` (a value of a multi-valued op) inserted before `anchor`."""
    with graph.inserting_before(anchor):
        item = graph.call_function(operator.getitem, (node, index))
    item.meta["val"] = node.meta["val"][index]
    return item
