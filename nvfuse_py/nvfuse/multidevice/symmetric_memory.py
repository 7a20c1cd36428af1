"""The symmetric-memory calls of the copy-engine all-gather (the "symm_mem"
overlap backend; set_overlap_backend in nvfuse.multidevice). nvfuse's C++
host program calls these on the current CUDA stream; they use torch's
symmetric memory (torch.distributed._symmetric_memory), which nvfuse's C++
side cannot link.

Each (group, device) keeps one symmetric buffer, grown to the largest shard
published so far; growing is a rendezvous of the whole group, which every
process reaches in the same call because every process runs the same
program on shards of the same size. An outgrown buffer is kept until exit:
work already queued may still use it.
"""

import os

import torch

_buffers = {}  # (group name, device index) -> (uint8 buffer, handle)
_remote_views = {}  # (handle id, peer, shape, dtype, offset) -> a view of a peer's buffer
# Buffers replaced by bigger ones: kept, since work already queued on a
# stream may still use them.
_retired = []


def _buffer(group, device, nbytes):
    import torch.distributed._symmetric_memory as symm_mem

    key = (group, device.index)
    held = _buffers.get(key)
    if held is None or held[0].numel() < nbytes:
        capacity = max(nbytes, 2 * held[0].numel() if held is not None else 0)
        if held is not None:
            _retired.append(held)
            _remote_views.clear()
        buffer = symm_mem.empty(capacity, dtype=torch.uint8, device=device)
        held = (buffer, symm_mem.rendezvous(buffer, group))
        _buffers[key] = held
    return held


def _timeout_ms():
    """NVFUSE_COMM_TIMEOUT_S, as for every collective: a lost peer ends a
    barrier with an error rather than a hang."""
    return int(float(os.environ.get("NVFUSE_COMM_TIMEOUT_S", "300")) * 1000)


def _publish(local, group):
    """A barrier (no peer still reads this device's buffer), `local` into
    the buffer, a barrier (every peer's shard is in its buffer)."""
    nbytes = local.numel() * local.element_size()
    buffer, handle = _buffer(group, local.device, nbytes)
    handle.barrier(channel=0, timeout_ms=_timeout_ms())
    buffer[:nbytes].view(local.dtype).view(local.shape).copy_(local)
    handle.barrier(channel=0, timeout_ms=_timeout_ms())


def _remote(handle, peer, shape, dtype, offset=0):
    """A view of group rank `peer`'s buffer, made once per (handle, view)."""
    key = (id(handle), peer, shape, dtype, offset)
    view = _remote_views.get(key)
    if view is None:
        view = handle.get_buffer(peer, shape, dtype, offset)
        _remote_views[key] = view
    return view


def _pull(dst, peer, group):
    """`dst` from the buffer of group rank `peer` (a copy-engine read)."""
    _, handle = _buffers[(group, dst.device.index)]
    dst.copy_(_remote(handle, peer, tuple(dst.shape), dst.dtype))


def _barrier(group):
    """A barrier over the group, on the current stream."""
    for (name, _), (_, handle) in _buffers.items():
        if name == group:
            handle.barrier(channel=0, timeout_ms=_timeout_ms())
            return


def _reserve(like, nbytes, group):
    """A buffer of at least `nbytes` (every process of the group at once)."""
    _buffer(group, like.device, nbytes)


def _push(src, peer, slot, group):
    """`src` into slot `slot` (slots of src's size) of group rank `peer`'s
    buffer (a copy-engine write)."""
    _, handle = _buffers[(group, src.device.index)]
    n = src.numel()
    _remote(handle, peer, (n,), src.dtype, slot * n).copy_(src.reshape(-1))


def _sum_slots(out, slots, group):
    """`out` = the sum of this device's first `slots` slots (of out's size)."""
    buffer, _ = _buffers[(group, out.device.index)]
    n = out.numel()
    partials = buffer[: slots * n * out.element_size()].view(out.dtype).view(slots, *out.shape)
    torch.sum(partials, dim=0, out=out)
