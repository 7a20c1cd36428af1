"""Shardings of a definition's inputs and outputs, and the local shards a
process passes to and gets from execute()."""

from dataclasses import dataclass
from typing import List

import torch

from .. import _C
from ..errors import DefinitionTypeError, InputError
from .mesh import DeviceMesh


@dataclass(frozen=True)
class Sharding:
    """How a tensor is distributed: `mesh`, and per logical axis the mesh
    axis it is split over (-1: every device of the mesh holds all of it).
    `whole_axis[a]`: the logical axis itself is on the mesh axis, so each
    shard has extent 1 there."""

    mesh: DeviceMesh
    mesh_axes: List[int]
    whole_axis: List[bool]

    def sharded_axes(self):
        return {a: m for a, m in enumerate(self.mesh_axes) if m >= 0}

    def global_sizes(self, local_sizes):
        """The global sizes of a tensor whose shards have `local_sizes`."""
        sizes = list(local_sizes)
        for a, m in self.sharded_axes().items():
            parts = self.mesh.shape[m]
            sizes[a] = parts if self.whole_axis[a] else sizes[a] * parts
        return sizes

    def local_slices(self, sizes, device):
        """The slices of a tensor of global `sizes` that `device` holds."""
        coords = _coordinates(self.mesh, device)
        slices = []
        for a, size in enumerate(sizes):
            m = self.mesh_axes[a]
            if m < 0:
                slices.append(slice(None))
                continue
            parts = self.mesh.shape[m]
            if self.whole_axis[a]:
                local = 1
            else:
                if size % parts:
                    raise InputError(
                        f"axis {a} of extent {size} does not split evenly over {parts} devices"
                    )
                local = size // parts
            slices.append(slice(coords[m] * local, (coords[m] + 1) * local))
        return tuple(slices)


def _coordinates(mesh, device):
    if device not in mesh:
        raise InputError(f"device {device} is not in {mesh!r}")
    index = mesh.devices.index(device)
    coords = []
    for extent in reversed(mesh.shape):
        coords.append(index % extent)
        index //= extent
    return list(reversed(coords))


def _from_c(entry):
    mesh, mesh_axes, whole_axis = entry
    return Sharding(DeviceMesh._wrap(mesh), list(mesh_axes), list(whole_axis))


def sharding_of(fd, tensor):
    """The sharding of input or output `tensor` of the defined `fd`."""
    from ..handles import Tensor

    if not isinstance(tensor, Tensor) or tensor._fd is not fd:
        raise DefinitionTypeError("expected a tensor of this FusionDefinition")
    fd._ensure_defined()
    return _from_c(_C.state_sharding(fd.id(), tensor._ref.index))


def _shardings(fd):
    """(input shardings, output shardings) of the defined `fd`, read once:
    execute() of DTensors needs them on every call."""
    if getattr(fd, "_shardings_cache", None) is None:
        fd._ensure_defined()
        fd._shardings_cache = (
            [None if e is None else _from_c(e) for e in _C.input_shardings(fd.id())],
            [_from_c(e) for e in _C.output_shardings(fd.id())],
        )
    return fd._shardings_cache


def input_shardings(fd):
    """Each input's Sharding (None for scalars)."""
    return list(_shardings(fd)[0])


def output_shardings(fd):
    return list(_shardings(fd)[1])


def _rank():
    import torch.distributed as dist

    return dist.get_rank() if dist.is_initialized() else 0


def shard_tensor(full, tensor, mesh=None, device=None):
    """This process's shard of `full`, the global value of definition tensor
    `tensor` (an input or output of a defined FusionDefinition), as execute()
    takes it. `mesh` (optional) must be the tensor's mesh; `device` defaults
    to this process's rank."""
    if not isinstance(full, torch.Tensor):
        raise DefinitionTypeError(
            f"shard_tensor: expected a torch.Tensor, got {type(full).__name__}"
        )
    sharding = sharding_of(tensor._fd, tensor)
    if mesh is not None and DeviceMesh(mesh) != sharding.mesh:
        raise InputError(
            f"shard_tensor: {tensor!r} is on {sharding.mesh!r}, not on {DeviceMesh(mesh)!r}"
        )
    if full.dim() != len(sharding.mesh_axes):
        raise InputError(
            f"shard_tensor: {tensor!r} has rank {len(sharding.mesh_axes)}, the tensor has {full.dim()}"
        )
    device = _rank() if device is None else device
    return full[sharding.local_slices(full.shape, device)].contiguous()


def unshard_tensor(local, sharding):
    """The global tensor from every process's `local` shard (an all-gather
    over torch.distributed's default group; for tests and checks)."""
    import torch.distributed as dist

    shards = [torch.empty_like(local) for _ in range(dist.get_world_size())]
    dist.all_gather(shards, local.contiguous())
    sizes = sharding.global_sizes(local.shape)
    full = torch.empty(sizes, dtype=local.dtype, device=local.device)
    for device in sharding.mesh.devices:
        full[sharding.local_slices(sizes, device)] = shards[device]
    return full
