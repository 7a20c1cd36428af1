"""execute() of a sharded fusion: bootstraps the communicator, accepts
DTensors (torch.distributed.tensor) for inputs and then returns DTensors
with matching placements."""

import torch

from .. import _C
from ..errors import InputError
from . import communicator
from .sharding import input_shardings, output_shardings

_torch_meshes = {}


def _dtensor_type():
    try:
        from torch.distributed.tensor import DTensor
    except ImportError:  # a torch without distributed support
        return None
    return DTensor


def _placements_of(sharding):
    from torch.distributed.tensor import Replicate, Shard

    placements = [Replicate() for _ in sharding.mesh.shape]
    for axis, m in sharding.sharded_axes().items():
        placements[m] = Shard(axis)
    return placements


def _local_of_dtensor(i, value, sharding):
    """The local shard of DTensor input `i` as execute() takes it. A
    `Partial` placement (each device holds a summand, as a row-parallel
    layer leaves its output) is first combined into what the definition
    expects on that mesh dim, by DTensor's own redistribute: an allreduce
    for Replicate(), a reduce-scatter for Shard(a)."""
    from torch.distributed.tensor import Partial, Replicate, Shard

    mesh = value.device_mesh
    ids = mesh.mesh
    if (
        list(ids.shape) != sharding.mesh.shape
        or [int(d) for d in ids.flatten()] != sharding.mesh.devices
    ):
        raise InputError(
            f"input {i}: the DTensor's mesh {ids.tolist()} is not the definition's "
            f"{sharding.mesh!r}"
        )
    expected = _placements_of(sharding)
    partial = False
    for m, placement in enumerate(value.placements):
        if isinstance(placement, Partial):
            partial = True
            continue
        expected_axis = next((a for a, mm in sharding.sharded_axes().items() if mm == m), None)
        if isinstance(placement, Shard):
            ok = placement.dim % value.dim() == expected_axis
        else:
            ok = isinstance(placement, Replicate) and expected_axis is None
        if not ok:
            want = "Replicate()" if expected_axis is None else f"Shard({expected_axis})"
            raise InputError(
                f"input {i}: placement {placement} on mesh dim {m} does not match the "
                f"definition, which expects {want}"
            )
    # Outputs on this mesh reuse the caller's torch DeviceMesh.
    _torch_meshes.setdefault(
        (mesh.device_type, tuple(sharding.mesh.shape), tuple(sharding.mesh.devices)), mesh
    )
    if partial:
        value = value.redistribute(mesh, expected)
    return value.to_local()


def _torch_mesh(sharding, device_type):
    from torch.distributed.device_mesh import DeviceMesh as TorchMesh

    key = (device_type, tuple(sharding.mesh.shape), tuple(sharding.mesh.devices))
    if key not in _torch_meshes:
        ids = torch.tensor(sharding.mesh.devices).reshape(sharding.mesh.shape)
        _torch_meshes[key] = TorchMesh(device_type, ids)
    return _torch_meshes[key]


def execute_sharded(fd, inputs):
    communicator.init()
    DTensor = _dtensor_type()
    any_dtensor = DTensor is not None and any(isinstance(x, DTensor) for x in inputs)
    local_inputs = list(inputs)
    if any_dtensor:
        shardings = input_shardings(fd)
        for i, x in enumerate(inputs):
            if isinstance(x, DTensor):
                local_inputs[i] = _local_of_dtensor(i, x, shardings[i])
    outputs = _C.execute(fd.id(), local_inputs)
    if not any_dtensor:
        return outputs
    device_type = next(x.device_mesh.device_type for x in inputs if isinstance(x, DTensor))
    wrapped = []
    for out, sharding in zip(outputs, output_shardings(fd)):
        if out is None:
            wrapped.append(None)
            continue
        global_shape = sharding.global_sizes(out.shape)
        wrapped.append(
            DTensor.from_local(
                out,
                _torch_mesh(sharding, device_type),
                _placements_of(sharding),
                run_check=False,
                shape=torch.Size(global_shape),
                stride=torch.empty(global_shape, device="meta").stride(),
            )
        )
    return wrapped
