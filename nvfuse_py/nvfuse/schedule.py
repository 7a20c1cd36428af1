"""fd.sched: the multi-device annotations of a definition.

    fd.sched._set_device_mesh(t, mesh)
    fd.sched.split(t, axis, factor, inner_split=True)
    fd.sched.parallelize(t, axis, ParallelType.mesh_x)

The tensor methods (t.set_device_mesh, t.outer_split, t.axis(i).parallelize)
and a FusionDefinition subclass's multidevice_schedule(self) record the same
calls. They are recorded like ops, so they take part in the cache key and
print in the repro script.
"""

from ._C import DeviceMesh as _CDeviceMesh
from ._C import ParallelType
from .errors import DefinitionTypeError
from .handles import Tensor


class Schedule:
    def __init__(self, fd):
        self._fd = fd

    def _tensor(self, tensor, what):
        if not isinstance(tensor, Tensor):
            raise DefinitionTypeError(
                f"{what}: expected a tensor of this definition, got {type(tensor).__name__}"
            )
        return self._fd._operand(tensor, what)

    def _record(self, method, args):
        state = self._fd._require_recording(method)
        state.record_op(method, args)

    def _set_device_mesh(self, tensor, mesh):
        what = "set_device_mesh"
        ref = self._tensor(tensor, what)
        mesh = getattr(mesh, "_mesh", mesh)
        if not isinstance(mesh, _CDeviceMesh):
            raise DefinitionTypeError(
                f"{what}: expected an nvfuse.multidevice.DeviceMesh, got {type(mesh).__name__}"
            )
        self._record("fd.sched._set_device_mesh", [("", ref), ("", mesh)])

    def split(self, tensor, axis, factor, inner_split=True):
        what = "split"
        ref = self._tensor(tensor, what)
        for name, value in (("axis", axis), ("factor", factor)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise DefinitionTypeError(f"{what}: {name} must be an int, got {value!r}")
        self._record(
            "fd.sched.split",
            [("", ref), ("", int(axis)), ("", int(factor)), ("inner_split", bool(inner_split))],
        )

    def parallelize(self, tensor, axis, parallel_type):
        what = "parallelize"
        ref = self._tensor(tensor, what)
        if isinstance(axis, bool) or not isinstance(axis, int):
            raise DefinitionTypeError(f"{what}: axis must be an int, got {axis!r}")
        if not isinstance(parallel_type, ParallelType):
            raise DefinitionTypeError(
                f"{what}: expected a ParallelType (e.g. ParallelType.mesh_x), got {parallel_type!r}"
            )
        self._record("fd.sched.parallelize", [("", ref), ("", int(axis)), ("", parallel_type)])
