"""Sharded fusions against the unsharded result, one test per resharding
kind, on 2 or 4 processes (tests that need a given world size skip on
others)."""

import math

import pytest
import torch

import nvfuse
from nvfuse import DataType, FusionDefinition, ParallelType
from nvfuse.multidevice import DeviceMesh, shard_tensor
from nvfuse.pytorch_utils import torch_dtype_to_nvfuse_dtype


def shard_axis(t, axis, mesh, parallel_type=ParallelType.mesh_x, parts=None):
    t.set_device_mesh(mesh)
    t.outer_split(axis, parts if parts is not None else mesh.size)
    t.axis(axis).parallelize(parallel_type)


def host_program(fd):
    return nvfuse._C.host_program(fd.id())


def test_pointwise_runs_on_local_shards(world):
    d = world.size
    mesh = DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x = fd.define_tensor((-1, -1), contiguity=True, dtype=DataType.Float)
        y = fd.ops.relu(fd.ops.mul(x, 2.0))
        fd.add_output(y)
        shard_axis(x, 0, mesh)
    full = world.randn(4 * d, 6)
    (y_local,) = fd.execute([shard_tensor(full, x, mesh)])
    assert y_local.shape == (4, 6)
    torch.testing.assert_close(y_local, shard_tensor((full * 2).relu(), y, mesh))
    (sharding,) = fd.output_shardings()
    assert sharding.mesh_axes == [0, -1]
    assert "communicate" not in host_program(fd)


@pytest.mark.parametrize("op", ["sum", "max"])
def test_reduction_over_sharded_axis_is_an_allreduce(world, op):
    d = world.size
    mesh = DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x = fd.define_tensor((-1, -1), contiguity=True, dtype=DataType.Float)
        y = getattr(fd.ops, op)(x, [0])
        fd.add_output(y)
        shard_axis(x, 0, mesh)
    full = world.randn(3 * d, 5, seed=1)
    (y_local,) = fd.execute([shard_tensor(full, x, mesh)])
    expected = full.sum(0) if op == "sum" else full.amax(0)
    torch.testing.assert_close(y_local, expected)
    assert "Allreduce T" in host_program(fd) and f"({op})" in host_program(fd)


def test_mean_over_a_sharded_symbolic_axis_divides_by_the_global_count(world):
    d = world.size
    mesh = DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x = fd.define_tensor((-1, -1), contiguity=True, dtype=DataType.Float)
        fd.add_output(fd.ops.mean(x, [0]))
        shard_axis(x, 0, mesh)
    full = world.randn(3 * d, 5, seed=2)
    (y_local,) = fd.execute([shard_tensor(full, x, mesh)])
    torch.testing.assert_close(y_local, full.mean(0))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("extents", ["symbolic", "constant"])
def test_var_mean_over_a_sharded_axis_is_two_allreduces(world, dtype, extents):
    d = world.size
    mesh = DeviceMesh(torch.arange(d))
    rows = 4 * d
    with FusionDefinition() as fd:
        shape = (-1, -1) if extents == "symbolic" else (rows, 6)
        x = fd.define_tensor(shape, contiguity=True, dtype=torch_dtype_to_nvfuse_dtype(dtype))
        var, mean = fd.ops.var_mean(x, [0], correction=1)
        fd.add_output(var)
        fd.add_output(mean)
        shard_axis(x, 0, mesh)
    # Offset by 100: a one-pass sum of squares would lose the variance.
    full = (world.randn(rows, 6, seed=3) + 100).to(dtype)
    var_local, mean_local = fd.execute([shard_tensor(full, x, mesh)])
    expected_var, expected_mean = torch.var_mean(full.float(), 0, correction=1)
    torch.testing.assert_close(var_local, expected_var.to(dtype))
    torch.testing.assert_close(mean_local, expected_mean.to(dtype))
    assert host_program(fd).count("Allreduce") == 2


def test_welford_and_var_over_a_sharded_axis(world):
    d = world.size
    mesh = DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x = fd.define_tensor((-1, -1), contiguity=True, dtype=DataType.Float)
        avg, var_sum, n = fd.ops.welford(x, [1])
        fd.add_output(avg)
        fd.add_output(var_sum)
        fd.add_output(n)
        fd.add_output(fd.ops.var(x, [1], correction=0, keepdim=True))
        shard_axis(x, 1, mesh)
    full = world.randn(3, 2 * d, seed=4)
    avg_l, var_sum_l, n_l, var_l = fd.execute([shard_tensor(full, x, mesh)])
    torch.testing.assert_close(avg_l, full.mean(1))
    torch.testing.assert_close(var_sum_l, full.var(1, correction=0) * 2 * d)
    assert n_l.tolist() == [2 * d] * 3
    torch.testing.assert_close(var_l, full.var(1, correction=0, keepdim=True))


def test_whole_operand_of_a_sharded_expr_is_sliced_locally(world):
    d = world.size
    mesh = DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        a = fd.define_tensor((-1, -1), contiguity=True, dtype=DataType.Float)
        b = fd.define_tensor((-1, -1), contiguity=True, dtype=DataType.Float)
        y = fd.ops.add(a, b)
        fd.add_output(y)
        shard_axis(a, 1, mesh)
        b.set_device_mesh(mesh)  # every process holds all of b
    full_a, full_b = world.randn(3, 2 * d, seed=30), world.randn(3, 2 * d, seed=31)
    (y_local,) = fd.execute([shard_tensor(full_a, a, mesh), full_b])
    torch.testing.assert_close(y_local, shard_tensor(full_a + full_b, y, mesh))
    assert "local slice" in host_program(fd) and "communicate" not in host_program(fd)


def test_reduction_into_a_sharded_output_is_a_reduce_scatter(world):
    d = world.size
    mesh = DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x = fd.define_tensor((-1, -1), contiguity=True, dtype=DataType.Float)
        y = fd.ops.sum(x, [0])
        fd.add_output(y)
        shard_axis(x, 0, mesh)
        shard_axis(y, 0, mesh)
    full = world.randn(2 * d, 4 * d, seed=2)
    (y_local,) = fd.execute([shard_tensor(full, x, mesh)])
    assert y_local.shape == (4,)
    torch.testing.assert_close(y_local, shard_tensor(full.sum(0), y, mesh))
    assert "ReduceScatter" in host_program(fd)


def test_replicated_output_is_an_allgather(world):
    d = world.size
    mesh = DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x = fd.define_tensor((-1, -1, -1), contiguity=True, dtype=DataType.Float)
        y = fd.ops.neg(x)
        fd.add_output(y)
        shard_axis(x, 1, mesh)
        y.set_device_mesh(mesh)
    full = world.randn(2, 3 * d, 5, seed=3)
    (y_local,) = fd.execute([shard_tensor(full, x, mesh)])
    torch.testing.assert_close(y_local, -full)
    assert "Allgather" in host_program(fd)


def test_moving_the_sharded_axis_is_an_alltoall(world):
    d = world.size
    mesh = DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x = fd.define_tensor((-1, -1), contiguity=True, dtype=DataType.Float)
        y = fd.ops.abs(x)
        fd.add_output(y)
        shard_axis(x, 0, mesh)
        shard_axis(y, 1, mesh)
    full = world.randn(2 * d, 3 * d, seed=4)
    (y_local,) = fd.execute([shard_tensor(full, x, mesh)])
    torch.testing.assert_close(y_local, shard_tensor(full.abs(), y, mesh))
    assert "AllToAll" in host_program(fd)


@pytest.mark.parametrize("kind", ["Broadcast", "Scatter"])
def test_from_one_device_to_the_mesh(world, kind):
    d = world.size
    mesh = DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x = fd.define_tensor((-1, -1), contiguity=True, dtype=DataType.Float)
        y = fd.ops.exp(x)
        fd.add_output(y)
        x.set_device_mesh(DeviceMesh([0]))
        if kind == "Scatter":
            shard_axis(y, 0, mesh)
        else:
            y.set_device_mesh(mesh)
    full = world.randn(2 * d, 3, seed=5)
    mine = full if world.rank == 0 else torch.empty(0, 0, device=world.device)
    (y_local,) = fd.execute([mine])
    expected = full.exp() if kind == "Broadcast" else shard_tensor(full.exp(), y, mesh)
    torch.testing.assert_close(y_local, expected)
    assert kind in host_program(fd)


def test_gather_onto_one_device(world):
    d = world.size
    mesh = DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x = fd.define_tensor((-1, -1), contiguity=True, dtype=DataType.Float)
        y = fd.ops.sin(x)
        fd.add_output(y)
        shard_axis(x, 0, mesh)
        y.set_device_mesh(DeviceMesh([0]))
    full = world.randn(2 * d, 3, seed=6)
    (y_local,) = fd.execute([shard_tensor(full, x, mesh)])
    if world.rank == 0:
        torch.testing.assert_close(y_local, full.sin())
    else:
        assert y_local is None
    assert "Gather" in host_program(fd)


@pytest.mark.parametrize("op", ["sum", "min"])
def test_reduction_onto_one_device_is_a_reduce(world, op):
    d = world.size
    mesh = DeviceMesh(torch.arange(d))
    root = d - 1
    with FusionDefinition() as fd:
        x = fd.define_tensor((-1, -1), contiguity=True, dtype=DataType.Float)
        y = getattr(fd.ops, op)(fd.ops.mul(x, 3.0), [0])
        fd.add_output(y)
        shard_axis(x, 0, mesh)
        y.set_device_mesh(DeviceMesh([root]))
    full = world.randn(2 * d, 5, seed=11)
    (y_local,) = fd.execute([shard_tensor(full, x, mesh)])
    if world.rank == root:
        expected = (full * 3).sum(0) if op == "sum" else (full * 3).amin(0)
        torch.testing.assert_close(y_local, expected)
    else:
        assert y_local is None
    program = host_program(fd)
    assert "Reduce T" in program and f"root {root}" in program and "Gather" not in program


def test_send_between_two_devices(world):
    with FusionDefinition() as fd:
        x = fd.define_tensor((-1,), contiguity=True, dtype=DataType.Float)
        y = fd.ops.cos(x)
        fd.add_output(y)
        x.set_device_mesh(DeviceMesh([0]))
        y.set_device_mesh(DeviceMesh([1]))
    full = world.randn(7, seed=7)
    mine = full if world.rank == 0 else torch.empty(0, device=world.device)
    (y_local,) = fd.execute([mine])
    if world.rank == 1:
        torch.testing.assert_close(y_local, full.cos())
    else:
        assert y_local is None
    assert "SendRecv" in host_program(fd)


def test_2d_mesh_reduces_within_each_row(world):
    if world.size != 4:
        pytest.skip("needs 4 processes")
    mesh = DeviceMesh([[0, 1], [2, 3]])
    with FusionDefinition() as fd:
        x = fd.define_tensor((-1, -1), contiguity=True, dtype=DataType.Float)
        y = fd.ops.sum(x, [1])
        fd.add_output(y)
        x.set_device_mesh(mesh)
        x.outer_split(0, 2)
        x.axis(0).parallelize(ParallelType.mesh_x)
        x.outer_split(2, 2)
        x.axis(2).parallelize(ParallelType.mesh_y)
    full = world.randn(6, 8, seed=8)
    (y_local,) = fd.execute([shard_tensor(full, x, mesh)])
    torch.testing.assert_close(y_local, shard_tensor(full.sum(1), y, mesh))
    # Seed 001: the reduction over mesh_y is one Allreduce per mesh row.
    assert "Allreduce" in host_program(fd) and "{0,1} {2,3}" in host_program(fd)


def gelu(fd, t):
    return fd.ops.mul(
        fd.ops.mul(t, 0.5), fd.ops.add(fd.ops.erf(fd.ops.mul(t, 1 / math.sqrt(2))), 1.0)
    )


def test_tensor_parallel_mlp(world):
    """Seed 003: column-parallel linear -> GELU -> row-parallel linear, one
    Allreduce."""
    d = world.size
    b, s, e = 2, 3, 4 * d
    mesh = DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x = fd.define_tensor((b, s, e), contiguity=True, dtype=DataType.Float)
        w0 = fd.define_tensor((4 * e, e), contiguity=True, dtype=DataType.Float)
        b0 = fd.define_tensor((4 * e,), contiguity=True, dtype=DataType.Float)
        w1 = fd.define_tensor((e, 4 * e), contiguity=True, dtype=DataType.Float)
        h = fd.ops.linear(x, w0, b0)
        out = fd.ops.linear(gelu(fd, h), w1)
        fd.add_output(out)
        x.set_device_mesh(mesh)
        shard_axis(w0, 0, mesh)
        shard_axis(w1, 1, mesh)
    xs, w0s, b0s, w1s = (
        world.randn(*shape, seed=10 + i)
        for i, shape in enumerate([(b, s, e), (4 * e, e), (4 * e,), (e, 4 * e)])
    )
    (out_local,) = fd.execute(
        [xs, shard_tensor(w0s, w0, mesh), shard_tensor(b0s, b0, mesh), shard_tensor(w1s, w1, mesh)]
    )
    expected = torch.nn.functional.linear(
        torch.nn.functional.gelu(torch.nn.functional.linear(xs, w0s, b0s)), w1s
    )
    torch.testing.assert_close(out_local, expected, rtol=1e-4, atol=1e-4)
    assert host_program(fd).count("communicate") == 1
    assert "Allreduce" in host_program(fd)


def test_dtensor_inputs_give_dtensor_outputs(world):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    d = world.size
    mesh = DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x = fd.define_tensor((-1, -1), contiguity=True, dtype=DataType.Float)
        y = fd.ops.relu(x)
        z = fd.ops.sum(x, [0])
        fd.add_output(y)
        fd.add_output(z)
        shard_axis(x, 0, mesh)
    torch_mesh = init_device_mesh(world.device.type, (d,))
    full = world.randn(2 * d, 3, seed=20)
    y_out, z_out = fd.execute([distribute_tensor(full, torch_mesh, [Shard(0)])])
    assert y_out.placements == (Shard(0),) and z_out.placements == (Replicate(),)
    torch.testing.assert_close(y_out.full_tensor(), full.relu())
    torch.testing.assert_close(z_out.full_tensor(), full.sum(0))
    with pytest.raises(nvfuse.InputError, match="placement"):
        fd.execute([distribute_tensor(full, torch_mesh, [Replicate()])])


@pytest.mark.parametrize("wanted", ["replicated", "sharded"])
def test_partial_dtensor_input_is_combined_first(world, wanted):
    """A Partial DTensor (each device holds a summand) is reduced into the
    placement the definition expects before the fusion runs."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard

    d = world.size
    mesh = DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x = fd.define_tensor((-1, -1), contiguity=True, dtype=DataType.Float)
        y = fd.ops.tanh(x)
        fd.add_output(y)
        if wanted == "sharded":
            shard_axis(x, 0, mesh)
        else:
            x.set_device_mesh(mesh)
    torch_mesh = init_device_mesh(world.device.type, (d,))
    full = world.randn(2 * d, 3, seed=21)
    summand = full * (world.rank + 1) / (d * (d + 1) / 2)
    partial = DTensor.from_local(summand, torch_mesh, [Partial()], run_check=False)
    (y_out,) = fd.execute([partial])
    assert y_out.placements == ((Shard(0),) if wanted == "sharded" else (Replicate(),))
    torch.testing.assert_close(y_out.full_tensor(), full.tanh())


def test_in_place_update_of_a_sharded_input(world):
    d = world.size
    mesh = DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x = fd.define_tensor((-1, -1), contiguity=True, dtype=DataType.Float)
        total = fd.ops.sum(x, [0])
        fd.add_output(fd.ops.add(fd.ops.mul(x, 2.0), 1.0), alias_input=x)
        fd.add_output(total)
        shard_axis(x, 0, mesh)
    full = world.randn(2 * d, 3, seed=22)
    mine = shard_tensor(full, x, mesh).clone()
    storage = mine.data_ptr()
    (total_local,) = fd.execute([mine])  # the in-place output is not returned
    assert mine.data_ptr() == storage
    torch.testing.assert_close(mine, shard_tensor(full * 2 + 1, x, mesh))
    torch.testing.assert_close(total_local, full.sum(0))  # read before the update
    assert len(fd.output_shardings()) == 1


def test_in_place_update_that_changes_the_sharding_is_unsupported(world):
    d = world.size
    mesh = DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x = fd.define_tensor((-1, -1), contiguity=True, dtype=DataType.Float)
        y = fd.define_tensor((-1, -1), contiguity=True, dtype=DataType.Float)
        fd.add_output(fd.ops.add(x, y), alias_input=y)
        shard_axis(x, 0, mesh)
        y.set_device_mesh(mesh)
    with pytest.raises(nvfuse.UnsupportedError, match="alias_input"):
        fd.execute([world.randn(2, 3), world.randn(2 * d, 3)])


def test_wrong_local_shape_names_the_input(world):
    d = world.size
    mesh = DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x = fd.define_tensor((4 * d, 3), contiguity=True, dtype=DataType.Float)
        fd.add_output(fd.ops.neg(x))
        shard_axis(x, 0, mesh)
    with pytest.raises(
        nvfuse.InputError, match=r"input 0 \(T0\): axis 0 has extent .* local shard of extent 4"
    ):
        fd.execute([world.randn(4 * d, 3)])


def test_mesh_larger_than_the_world_is_an_input_error(world):
    mesh = DeviceMesh(torch.arange(world.size + 1))
    with FusionDefinition() as fd:
        x = fd.define_tensor((-1,), contiguity=True, dtype=DataType.Float)
        fd.add_output(fd.ops.neg(x))
        x.set_device_mesh(mesh)
    with pytest.raises(nvfuse.InputError, match="processes"):
        fd.execute([world.randn(3)])
