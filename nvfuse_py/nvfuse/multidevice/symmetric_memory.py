"""The symmetric-memory calls of the copy-engine loops (the "symm_mem"
overlap backend, and "auto" where it picks them; set_overlap_backend in
nvfuse.multidevice), and the question "auto" asks first: can every device
of the team read every other's memory? nvfuse's C++
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
import socket

import torch

_buffers = {}  # (group name, device index) -> (uint8 buffer, handle)
_remote_views = {}  # (handle id, peer, shape, dtype, offset) -> a view of a peer's buffer
# Buffers replaced by bigger ones: kept, since work already queued on a
# stream may still use them.
_retired = []
_reachable = {}  # (group name, device index) -> whether the group's devices are peers


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


def _device_id(index):
    """A name for a GPU that is the same in every process of the host
    (device indices are not, under per-process CUDA_VISIBLE_DEVICES)."""
    return str(torch.cuda.get_device_properties(index).uuid)


def _reaches_all(device, members):
    """Whether this process's `device` can read the memory of every
    member's GPU: one host, each GPU visible here and peer-accessible."""
    try:
        import torch.distributed._symmetric_memory  # noqa: F401 - needed by the loops

        visible = {_device_id(i): i for i in range(torch.cuda.device_count())}
        host = socket.gethostname()
        return all(
            other_host == host
            and other_id in visible
            and (
                visible[other_id] == device.index
                or torch.cuda.can_device_access_peer(device.index, visible[other_id])
            )
            for other_host, other_id in members
        )
    except Exception:  # noqa: BLE001 - any doubt keeps the c10d loop
        return False


def _peers_reachable(like, group):
    """Whether every device of `group` can read every other's memory, the
    same answer on every device: a collective over the group (the members'
    hosts and GPUs gathered, each one's verdict reduced by MIN), asked once
    per group and device. Every member asks at the same call, since every
    process runs the same program."""
    import torch.distributed as dist
    from torch.distributed.distributed_c10d import _resolve_process_group

    key = (group, like.device.index)
    if key not in _reachable:
        process_group = _resolve_process_group(group)
        members = [None] * dist.get_world_size(process_group)
        dist.all_gather_object(
            members, (socket.gethostname(), _device_id(like.device.index)), group=process_group
        )
        verdict = torch.tensor([int(_reaches_all(like.device, members))], device=like.device)
        dist.all_reduce(verdict, op=dist.ReduceOp.MIN, group=process_group)
        _reachable[key] = bool(verdict.item())
    return _reachable[key]
