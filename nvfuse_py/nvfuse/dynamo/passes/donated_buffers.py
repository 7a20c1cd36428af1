"""Saved activations the backward may overwrite: AOTAutograd's donated
buffers. A backward graph's input saved from the forward that shares no
memory with a forward input, a user output or a gradient is "donated"
(`fw_metadata.bw_donated_idxs`): once the backward reads it, nothing else
will, because torch refuses `retain_graph=True` (and `create_graph=True`)
on such a backward, for every backend. Inductor reuses those buffers for
its own results; here, an elementwise op that is the buffer's only reader
writes its result into it.

    grad_w = mul(saved_grad_w, grad_loss)        # a fresh 525 MB tensor
    grad_w = copy_(saved_grad_w, mul(saved_grad_w, grad_loss))  # in place

The write is functionalization's input update (in_place_updates.py): the
region holding the op writes the input itself when its kernel is
pointwise (the runtime checks the layout and aliasing at each call), so
the backward never holds both the saved tensor and its scaled copy. The
chunked LM-head loss (linear_cross_entropy.py) saves its weight's gradient
from the forward and scales it in the backward: at a 128k vocabulary that
copy was the backward's peak.

Two passes: `write_into_donated_buffers` before the partitioner, and
`undo_unfused_buffer_writes` on its proposal (dead_gemm_results.py's
writes too), which gives the op its own result back where the write
would not replace a fresh output by an in-place one: the op outside any
region, in another region than the write, a reader of the buffer in
another region (it might run after the write), the op read only inside
its region (the kernel would write a value it keeps in registers now),
or a region with other work than pointwise ops and views of values the
buffer does not feed (a reduction's or a coordinate kernel would write a
fresh tensor and copy it in, one more pass over the buffer than
before)."""

import torch
from torch._prims_common import is_non_overlapping_and_dense_or_false
from torch.multiprocessing.reductions import StorageWeakRef

from ..translate import BINARY, UNARY, VIEWS
from .graph_edits import finish_rewrite, has_static_layout, meta_of

aten = torch.ops.aten
prims = torch.ops.prims


def _elementwise_ops():
    ops = {getattr(aten, name).default for name in UNARY}
    overloads = ("Tensor", "Scalar", "default", "Tensor_Scalar", "Tensor_Tensor", "Tensor_mode")
    for name in [*BINARY, "add", "sub", "rsub", "div", "pow"]:
        packet = getattr(aten, name)
        ops.update(getattr(packet, o) for o in overloads if hasattr(packet, o))
    ops.update(
        {
            aten.clamp.default,
            aten.clamp_min.default,
            aten.clamp_max.default,
            aten.where.self,
            aten._to_copy.default,
            prims.convert_element_type.default,
        }
    )
    return ops


# Ops whose result element i reads their operands at element i only (or
# broadcast): a result written over an operand of its own shape reads each
# element before the same thread overwrites it.
ELEMENTWISE = _elementwise_ops()


def is_elementwise(node):
    """Whether `node` is an ELEMENTWISE op, or a clone that keeps its
    operand's layout (a copy: timm's MLP clones its GELU's result before
    the second linear, and a ConvNeXt's GELU wrote a fresh 154 MB tensor
    at batch 64 instead of the first linear's dead result)."""
    if node.op != "call_function":
        return False
    if node.target in ELEMENTWISE:
        return True
    if node.target is not aten.clone.default:
        return False
    result, operand = meta_of(node), meta_of(node.args[0])
    return (
        isinstance(result, torch.Tensor)
        and isinstance(operand, torch.Tensor)
        and result.stride() == operand.stride()
    )


# What a region may hold besides elementwise ops for its writes to stay: a
# region of only those runs as pointwise kernels, which write their aliased inputs in
# place. A reduction's or a coordinate kernel's (iota, slices, pads, cat,
# gathers) writes a fresh tensor and copies it in, and a permuting view
# could read the buffer at other coordinates than the thread writing them.
_POINTWISE_REGION_EXTRAS = {
    aten.expand.default,
    aten.copy_.default,  # the writes themselves
    aten.scalar_tensor.default,
    aten.full.default,
}

_BUFFER_WRITE = "nvfuse_buffer_write"
_WRITTEN = "nvfuse_written_buffer"
_UNDONE = "nvfuse_buffer_write_undone"


def donated_indices():
    """The backward inputs AOTAutograd donated to the graph being compiled
    (positions among its placeholders), or () outside a backward compile
    or with `torch._functorch.config.donated_buffer` off."""
    context = torch._guards.TracingContext.try_get()
    metadata = getattr(context, "fw_metadata", None)
    return tuple(getattr(metadata, "bw_donated_idxs", None) or ())


def _storage(value):
    try:
        return StorageWeakRef(value.untyped_storage())
    except (NotImplementedError, RuntimeError):
        return None


def _shares_memory(buffer, placeholders):
    """Whether another input's meta value shares `buffer`'s storage (two
    saved views of one tensor): writing one would change the other."""
    storage = _storage(meta_of(buffer))
    return storage is None or any(
        p is not buffer and isinstance(meta_of(p), torch.Tensor) and _storage(meta_of(p)) == storage
        for p in placeholders
    )


def writable_by(buffer, op):
    """Whether `op`'s result can overwrite `buffer`, which it reads: it is
    elementwise, and its result has the buffer's dtype, device, sizes and
    strides, over memory with no gaps or overlaps."""
    saved, result = meta_of(buffer), meta_of(op)
    if not has_static_layout(saved) or not has_static_layout(result):
        return False  # a copy_ needs static sizes, and comparing would guard
    return (
        is_elementwise(op)
        and result.dtype == saved.dtype
        and result.device == saved.device
        and tuple(result.shape) == tuple(saved.shape)
        and result.stride() == saved.stride()
        and is_non_overlapping_and_dense_or_false(saved)
    )


def write_into_donated_buffers(gm, donated):
    """For each donated input (positions `donated` among the placeholders)
    whose only reader is an elementwise op of its layout: the op's result
    written into it (`copy_(input, op)`, marked), read in place of the
    op's. Returns how many."""
    graph = gm.graph
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    writes = 0
    written = set()  # ops that write one buffer already
    for index in donated:
        if index >= len(placeholders):
            continue
        buffer = placeholders[index]
        if len(buffer.users) != 1:
            continue
        op = next(iter(buffer.users))
        if op in written or not writable_by(buffer, op):
            continue
        if _shares_memory(buffer, placeholders):
            continue
        written.add(op)
        write_result_into(graph, buffer, op)
        writes += 1
    return finish_rewrite(gm, writes)


def write_result_into(graph, buffer, op):
    """Inserts `copy_(buffer, op)`, marked as a buffer write, and makes
    every reader of `op`'s result read the write instead."""
    with graph.inserting_after(op):
        write = graph.call_function(aten.copy_.default, (buffer, op))
    write.meta["val"] = meta_of(buffer)
    write.meta[_BUFFER_WRITE] = True
    buffer.meta[_WRITTEN] = True
    op.replace_all_uses_with(write, delete_user_cb=lambda user: user is not write)
    return write


def is_written_buffer(node):
    """Whether `node` is the buffer of a write_result_into write: it stays
    outside every region (a region must read it as an input to write it
    in place; a view of a GEMM's result inside the region would be the
    region's own value)."""
    return node.meta.get(_WRITTEN, False)


def is_buffer_write(node):
    """Whether `node` is a write into a buffer nothing reads afterwards
    (write_result_into's): the region holding it writes in place."""
    return node.meta.get(_BUFFER_WRITE, False)


def _in_place_in(write, partition):
    """Whether `partition`'s kernel would write the op's result into the
    buffer in place, instead of a result it writes anyway: the op and
    every reader of the buffer are in the region (a reader outside might
    run after the write), the region is pointwise work only, and
    something outside the region reads the result (an intermediate the
    kernel keeps in registers would become a write of the whole buffer,
    and cut the kernel in two)."""
    buffer, op = write.args
    return (
        op in partition.nodes
        and all(user in partition.nodes for user in buffer.users)
        and any(user not in partition.nodes for user in write.users)
        and _pointwise_around(buffer, partition.nodes)
    )


def _pointwise_around(buffer, nodes):
    """Whether the region `nodes` is pointwise work only, apart from views
    of values that do not depend on `buffer` (batch norm's [C] statistics
    unsqueezed to broadcast): those read no element of the buffer."""
    from_buffer = _reached_from(buffer, nodes)
    return all(
        is_elementwise(n)
        or n.target in _POINTWISE_REGION_EXTRAS
        or (n.target in VIEWS and n not in from_buffer)
        for n in nodes
    )


def _reached_from(buffer, nodes):
    """The nodes of `nodes` that read `buffer`, directly or not."""
    reached, frontier = set(), [buffer]
    while frontier:
        for user in frontier.pop().users:
            if user in nodes and user not in reached:
                reached.add(user)
                frontier.append(user)
    return reached


def was_undone(node):
    """Whether `node` is a write undo_unfused_buffer_writes took out of the
    graph (a report of the graph's nodes from before the partitioner
    leaves it out)."""
    return node.meta.get(_UNDONE, False)


def undo_unfused_buffer_writes(gm, partitions):
    """Gives each marked write's op its result back (and drops the write)
    where the region would not write the buffer in place; returns how many
    it undid."""
    owner = {node: p for p in partitions for node in p.nodes}
    undone = 0
    for write in [n for n in gm.graph.nodes if is_buffer_write(n)]:
        partition = owner.get(write)
        if partition is not None and _in_place_in(write, partition):
            continue
        if partition is not None:
            partition.remove_node(write)
        write.replace_all_uses_with(write.args[1])
        write.meta[_UNDONE] = True
        gm.graph.erase_node(write)
        undone += 1
    if undone:
        gm.recompile()
    return undone
