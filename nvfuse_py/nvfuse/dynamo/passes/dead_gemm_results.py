"""GEMM and convolution results that elementwise ops overwrite.

A convolution's or a GEMM's result that only elementwise ops read is
dead once they have read it. The first of their values with the
result's dtype, sizes and strides that something else reads is written
into the result's memory instead of a fresh tensor (Inductor reuses such
buffers too):

    y = conv(x)                      # 98 MB
    out = relu(bn(y) + residual)     # another 98 MB while y is alive
    out = copy_(y, relu(bn(y) + residual))   # in place: y's 98 MB only

A ResNet-50 inference step at batch 64 holds a bottleneck's input, its
last convolution's result and the block's output at once without this:
three 98 MB tensors at its peak, one more than Inductor's.

The ops may change the dtype on their way (bf16 batch norm computes in
float32 and casts back at its end), so the write goes to the first op of
the result's layout, not to the first reader. Every op from the result
to that one is elementwise, so its element i depends on the result's
element i alone, read by the thread that writes it. The writes are the
donated buffers' (donated_buffers.py): marked `copy_`s that the
partitioner undoes where the region holding them would not write in
place (a reduction or a coordinate kernel in the region, the ops split
over regions); where a fusion is cut into kernels after all, nvfuse
writes a fresh tensor and copies it in rather than let a later kernel
read overwritten values.

The result may reach the chain through views (a 1x1 convolution run as
a GEMM is read as its [N, C, H, W] channels-last view); every view on the
way must be its source's only reader. GEMMs that gemm_alignment.py pads
are left alone: their result is a slice of a wider one, which no kernel
can write as a dense tensor."""

import operator

import torch

from ..translate import VIEWS
from .donated_buffers import is_elementwise, writable_by, write_result_into
from .gemm_alignment import is_padded
from .graph_edits import finish_rewrite

aten = torch.ops.aten

# Ops whose result is a fresh tensor nvfuse never computes itself.
_FRESH_RESULTS = {
    aten.convolution.default,
    aten.mm.default,
    aten.addmm.default,
    aten.bmm.default,
}

# Views that keep every element where it was: not reshape (which may
# copy), expand (overlapping), slices or getitem.
_PLAIN_VIEWS = set(VIEWS) - {
    aten.reshape.default,
    aten.expand.default,
    aten.slice.Tensor,
    operator.getitem,
}


def _is_dead_fresh_result(buffer):
    """Whether `buffer` is a fresh GEMM or convolution result, directly or
    through plain views each of which its source's only reader."""
    node = buffer
    while node.op == "call_function" and node.target in _PLAIN_VIEWS:
        node = node.args[0]
        if not isinstance(node, torch.fx.Node) or len(node.users) != 1:
            return False
    if node.op != "call_function" or node.target not in _FRESH_RESULTS:
        return False
    return not is_padded(node)


def _elementwise_readers(buffer):
    """The ops that read `buffer` through elementwise ops only (each
    element i of theirs from element i of the buffer), or None when a
    reader of the buffer is not elementwise."""
    if not buffer.users or not all(is_elementwise(u) for u in buffer.users):
        return None
    reached, frontier = set(), [buffer]
    while frontier:
        for user in frontier.pop().users:
            if is_elementwise(user) and user not in reached:
                reached.add(user)
                frontier.append(user)
    return reached


def _first_writer(buffer, order):
    """The first op (in graph `order`) of the elementwise ops reading
    `buffer` that can write its result into it and whose result something
    other than them reads (a value the kernel keeps in registers would
    become one more write), or None. The first: a ResNet block's output
    is read by the next block's residual add too, so the ops reading a
    convolution's result reach down the whole residual stream; the block's
    own output is the value its region writes."""
    readers = _elementwise_readers(buffer)
    if readers is None:
        return None
    writers = [
        op
        for op in readers
        if writable_by(buffer, op) and any(user not in readers for user in op.users)
    ]
    return min(writers, key=order.__getitem__, default=None)


def _buffers_of(graph):
    """The nodes elementwise ops might read a dead fresh result through:
    the fresh results and their views."""
    return [
        n
        for n in graph.nodes
        if n.op == "call_function"
        and (n.target in _FRESH_RESULTS or n.target in _PLAIN_VIEWS)
        and _is_dead_fresh_result(n)
    ]


def write_into_dead_gemm_results(gm):
    """Writes the result of the elementwise ops reading a dead GEMM or
    convolution result into that result's memory (see the module's doc);
    returns how many writes it made."""
    graph = gm.graph
    order = {node: i for i, node in enumerate(graph.nodes)}
    writes = 0
    written = set()  # ops that write one buffer already
    for buffer in _buffers_of(graph):
        op = _first_writer(buffer, order)
        if op is None or op in written:
            continue
        written.add(op)
        write_result_into(graph, buffer, op)
        writes += 1
    return finish_rewrite(gm, writes)
