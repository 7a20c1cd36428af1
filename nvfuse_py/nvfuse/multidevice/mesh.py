"""DeviceMesh: an n-D array of device ids (ranks) a tensor is distributed over."""

import torch

from .. import _C
from ..errors import DefinitionError, DefinitionTypeError


class DeviceMesh:
    """DeviceMesh(torch.arange(4)), DeviceMesh([[0, 1], [2, 3]]), or
    DeviceMesh(4) for the devices 0..3. Ids must be distinct and >= 0; a mesh
    has at most 3 axes (mesh_x, mesh_y, mesh_z)."""

    __slots__ = ("_mesh",)

    def __init__(self, devices):
        if isinstance(devices, DeviceMesh):
            self._mesh = devices._mesh
            return
        if isinstance(devices, int) and not isinstance(devices, bool):
            devices = list(range(devices))
        try:
            ids = torch.as_tensor(devices)
        except (TypeError, ValueError) as e:
            raise DefinitionTypeError(
                f"DeviceMesh: expected device ids as a tensor or (nested) list, got {devices!r}"
            ) from e
        if ids.dim() == 0 or ids.numel() == 0:
            raise DefinitionError(f"DeviceMesh: needs at least one device, got {devices!r}")
        if ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
            raise DefinitionTypeError(f"DeviceMesh: device ids must be integers, got {ids.dtype}")
        if ids.dim() > 3:
            raise DefinitionError(
                f"DeviceMesh: a mesh has at most 3 axes (mesh_x, mesh_y, mesh_z), got shape "
                f"{list(ids.shape)}"
            )
        self._mesh = _C.DeviceMesh(list(ids.shape), [int(i) for i in ids.flatten().tolist()])

    @property
    def shape(self):
        return list(self._mesh.shape)

    @property
    def ndim(self):
        return len(self._mesh.shape)

    @property
    def size(self):
        return self._mesh.size

    @property
    def devices(self):
        """The device ids, flattened in row-major order."""
        return list(self._mesh.devices)

    def __len__(self):
        return self._mesh.size

    def __contains__(self, device):
        return device in self._mesh.devices

    def __eq__(self, other):
        return isinstance(other, DeviceMesh) and self._mesh == other._mesh

    def __hash__(self):
        return hash(self._mesh)

    def __repr__(self):
        return repr(self._mesh)

    @classmethod
    def _wrap(cls, c_mesh):
        mesh = cls.__new__(cls)
        mesh._mesh = c_mesh
        return mesh
