"""Multi-device annotations in one process: how they are recorded (cache
key, printing, repro), checked where they are written, and what host
program a sharded definition gets. The multi-process runs are in
tests_py/multidevice (launched by test_multidevice_launch.py)."""

import pytest
import torch

import nvfuse
from nvfuse import DataType, FusionDefinition, ParallelType
from nvfuse.multidevice import DeviceMesh


def sharded_relu(mesh, parts, axis=0):
    with FusionDefinition() as fd:
        x = fd.define_tensor((-1, -1), contiguity=True, dtype=DataType.Float)
        fd.add_output(fd.ops.relu(x))
        x.set_device_mesh(mesh)
        x.outer_split(axis, parts)
        x.axis(axis).parallelize(ParallelType.mesh_x)
    return fd


def test_device_mesh_forms():
    assert DeviceMesh(4) == DeviceMesh(torch.arange(4)) == DeviceMesh([0, 1, 2, 3])
    mesh = DeviceMesh([[0, 1], [2, 3]])
    assert mesh.shape == [2, 2] and mesh.devices == [0, 1, 2, 3] and 3 in mesh
    assert repr(mesh) == "DeviceMesh([[0, 1], [2, 3]])"
    assert repr(DeviceMesh([[[0], [1]]])) == "DeviceMesh([[[0], [1]]])"


@pytest.mark.parametrize(
    "devices, error",
    [
        ([0, 0], nvfuse.DefinitionError),
        ([-1, 0], nvfuse.DefinitionError),
        ([], nvfuse.DefinitionError),
        ([[[[0]]]], nvfuse.DefinitionError),
        ([0.5], nvfuse.DefinitionTypeError),
    ],
)
def test_bad_meshes_are_rejected(devices, error):
    with pytest.raises(error):
        DeviceMesh(devices)


def test_annotations_are_recorded_and_printed():
    fd = sharded_relu(DeviceMesh(2), 2)
    text = fd.repro_script()
    assert "from nvfuse.multidevice import DeviceMesh" in text
    assert "fd.sched._set_device_mesh(T0, DeviceMesh([0, 1]))" in text
    assert "fd.sched.split(T0, 0, 2, inner_split=False)" in text
    assert "fd.sched.parallelize(T0, 0, ParallelType.mesh_x)" in text
    # The repro script defines the same fusion again.
    scope = {}
    exec(text, scope)
    assert scope["fd"].id() == fd.id()


def test_annotations_are_part_of_the_cache_key():
    a = sharded_relu(DeviceMesh(2), 2)
    assert sharded_relu(DeviceMesh(2), 2).id() == a.id()
    assert sharded_relu(DeviceMesh(2), 2, axis=1).id() != a.id()
    assert sharded_relu(DeviceMesh([1, 0]), 2).id() != a.id()


def test_multidevice_schedule_records_the_same_calls():
    mesh = DeviceMesh(2)

    class Relu(FusionDefinition):
        def definition(self):
            self.x = self.define_tensor((-1, -1), contiguity=True, dtype=DataType.Float)
            self.add_output(self.ops.relu(self.x))

        def multidevice_schedule(self):
            self.sched._set_device_mesh(self.x, mesh)
            self.sched.split(self.x, 0, 2, inner_split=False)
            self.sched.parallelize(self.x, 0, ParallelType.mesh_x)

    fd = Relu()
    fd._ensure_defined()
    assert fd.id() == sharded_relu(mesh, 2).id()


def test_bad_annotations_fail_where_written_and_change_nothing():
    with FusionDefinition() as fd:
        x = fd.define_tensor((-1, -1), contiguity=True, dtype=DataType.Float)
        fd.add_output(fd.ops.neg(x))
        x.set_device_mesh(DeviceMesh(2))
        with pytest.raises(nvfuse.DefinitionError, match="TIDx"):
            x.axis(0).parallelize(ParallelType.TIDx)
        with pytest.raises(nvfuse.DefinitionError, match="out of range"):
            x.split(5, 2)
        with pytest.raises(nvfuse.DefinitionError, match="positive"):
            x.split(0, 0)
        with pytest.raises(nvfuse.DefinitionError, match="mesh axis 1|1 axes"):
            x.axis(0).parallelize(ParallelType.mesh_y)
        x.outer_split(0, 3)
        with pytest.raises(
            nvfuse.DefinitionError, match="split into 3 parts but mesh axis 0 has 2"
        ):
            x.axis(0).parallelize(ParallelType.mesh_x)
        with pytest.raises(nvfuse.DefinitionTypeError, match="DeviceMesh"):
            x.set_device_mesh([0, 1])
        x.axis(2).parallelize(ParallelType.mesh_x)  # logical axis 1 itself
    assert "parallelize(T0, 2, ParallelType.mesh_x)" in fd.repro_script()
    assert fd.repro_script().count("fd.sched.parallelize") == 1


def test_sharded_fusion_outside_a_launcher_is_an_input_error(monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    import torch.distributed as dist

    if dist.is_initialized():
        pytest.skip("torch.distributed is initialized in this process")
    fd = sharded_relu(DeviceMesh(2), 2)
    with pytest.raises(nvfuse.InputError, match="torchrun"):
        fd.execute([torch.randn(2, 3)])


def test_tensor_parallel_mlp_host_program():
    """Seed 003: one Allreduce after the row-parallel linear; the bias of
    the column-parallel one is sharded with its weight."""
    mesh = DeviceMesh(4)
    with FusionDefinition() as fd:
        x = fd.define_tensor((2, 8, 16), contiguity=True, dtype=DataType.Float)
        w0 = fd.define_tensor((64, 16), contiguity=True, dtype=DataType.Float)
        b0 = fd.define_tensor((64,), contiguity=True, dtype=DataType.Float)
        w1 = fd.define_tensor((16, 64), contiguity=True, dtype=DataType.Float)
        out = fd.ops.linear(fd.ops.relu(fd.ops.linear(x, w0, b0)), w1)
        fd.add_output(out)
        x.set_device_mesh(mesh)
        for w, axis in ((w0, 0), (w1, 1)):
            w.set_device_mesh(mesh)
            w.outer_split(axis, 4)
            w.axis(axis).parallelize(ParallelType.mesh_x)
    program = nvfuse._C.host_program(fd.id())
    assert program.count("communicate") == 1
    assert "Allreduce" in program and "{0,1,2,3}" in program
    shardings = {
        s.mesh_axes.index(0) if 0 in s.mesh_axes else None
        for s in [nvfuse.multidevice.sharding.sharding_of(fd, b0)]
    }
    assert shardings == {0}
    assert fd.output_shardings()[0].mesh_axes == [-1, -1, -1]


def test_row_parallel_linear_with_bias_is_unsupported():
    mesh = DeviceMesh(2)
    with FusionDefinition() as fd:
        x = fd.define_tensor((4, 8), contiguity=True, dtype=DataType.Float)
        w = fd.define_tensor((3, 8), contiguity=True, dtype=DataType.Float)
        b = fd.define_tensor((3,), contiguity=True, dtype=DataType.Float)
        fd.add_output(fd.ops.linear(x, w, b))
        x.set_device_mesh(mesh)
        w.set_device_mesh(mesh)
        w.outer_split(1, 2)
        w.axis(1).parallelize(ParallelType.mesh_x)
    with pytest.raises(nvfuse.UnsupportedError, match="bias"):
        nvfuse._C.host_program(fd.id())


def test_uneven_constant_split_is_a_definition_error():
    mesh = DeviceMesh(4)
    with FusionDefinition() as fd:
        x = fd.define_tensor((6, 3), contiguity=True, dtype=DataType.Float)
        fd.add_output(fd.ops.neg(x))
        x.set_device_mesh(mesh)
        x.outer_split(0, 4)
        x.axis(0).parallelize(ParallelType.mesh_x)
    with pytest.raises(nvfuse.DefinitionError, match="does not split evenly over 4 devices"):
        nvfuse._C.host_program(fd.id())
