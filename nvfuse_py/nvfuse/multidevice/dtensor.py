"""execute() of a sharded fusion: bootstraps the communicator, accepts
DTensors (torch.distributed.tensor) for inputs and then returns DTensors
with matching placements."""

import torch

from .. import _C
from ..errors import InputError, UnsupportedError
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


def _check_dtensor(i, value, sharding):
    from torch.distributed.tensor import Partial, Replicate, Shard

    mesh = value.device_mesh
    ids = mesh.mesh
    if list(ids.shape) != sharding.mesh.shape or [int(d) for d in ids.flatten()] != sharding.mesh.devices:
        raise InputError(
            f"input {i}: the DTensor's mesh {ids.tolist()} is not the definition's "
            f"{sharding.mesh!r}"
        )
    for m, placement in enumerate(value.placements):
        if isinstance(placement, Partial):
            raise UnsupportedError(f"input {i}: Partial DTensor placements are not accepted yet")
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
        for i, x in enumerate(inputs):
            if isinstance(x, DTensor):
                _check_dtensor(i, x, input_shardings(fd)[i])
                local_inputs[i] = x.to_local()
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
