"""All-gather + GEMM and GEMM + reduce-scatter lowered to pipelined loops
over stream chunks (multidevice/runtime/host/): the result equals the
unsharded computation for 1, 2 and 4 chunks, in every spelling of the
chunking, on 2 or 4 processes."""

import pytest
import torch
from test_sharded_fusions import gelu, host_program, shard_axis

import nvfuse
from nvfuse import DataType, FusionDefinition, ParallelType
from nvfuse.multidevice import DeviceMesh, shard_tensor


def stream_split(t, axis, chunks):
    t.outer_split(axis, chunks)
    t.axis(axis).parallelize(ParallelType.stream)


def assert_pipelined(fd, kind):
    program = host_program(fd)
    assert f"pipelined {kind}" in program, program
    assert "communicate:" not in program, program


@pytest.mark.parametrize("chunks", [1, 2, 4])
def test_allgather_matmul_over_row_chunks(world, chunks):
    d = world.size
    mesh = DeviceMesh(torch.arange(d))
    m, k, n = 8 * d, 16, 12
    with FusionDefinition() as fd:
        a = fd.define_tensor((m, k), contiguity=True, dtype=DataType.Float)
        b = fd.define_tensor((k, n), contiguity=True, dtype=DataType.Float)
        c = fd.ops.matmul(a, b)
        fd.add_output(c)
        shard_axis(a, 0, mesh)
        b.set_device_mesh(mesh)
        c.set_device_mesh(mesh)
        stream_split(c, 0, chunks)
    full_a, full_b = world.randn(m, k, seed=1), world.randn(k, n, seed=2)
    (c_local,) = fd.execute([shard_tensor(full_a, a, mesh), full_b])
    torch.testing.assert_close(c_local, full_a @ full_b, rtol=1e-4, atol=1e-4)
    assert_pipelined(fd, "Allgather + matmul")
    assert f"chunks: {chunks} from a stream split" in host_program(fd)


def test_allgather_matmul_of_the_seed_layout(world):
    """A [S, DIDx(D), M/(S*D), K] with axis 0 on stream: chunk i is A[i]."""
    d = world.size
    mesh = DeviceMesh(torch.arange(d))
    s, rows, k, n = 3, 4, 8, 6
    with FusionDefinition() as fd:
        a = fd.define_tensor((s, d, rows, k), contiguity=True, dtype=DataType.Float)
        b = fd.define_tensor((k, n), contiguity=True, dtype=DataType.Float)
        c = fd.ops.matmul(a, b)
        fd.add_output(c)
        a.set_device_mesh(mesh)
        a.axis(1).parallelize(ParallelType.mesh_x)
        b.set_device_mesh(mesh)
        c.set_device_mesh(mesh)
        c.axis(0).parallelize(ParallelType.stream)
    full_a, full_b = world.randn(s, d, rows, k, seed=3), world.randn(k, n, seed=4)
    (c_local,) = fd.execute([shard_tensor(full_a, a, mesh), full_b])
    torch.testing.assert_close(c_local, full_a @ full_b, rtol=1e-4, atol=1e-4)
    assert_pipelined(fd, "Allgather + matmul")
    assert "axis 0 on stream" in host_program(fd)


def test_allgather_linear_with_bias_and_chosen_chunks(world):
    """No stream axis: the chunk count is chosen per call; a bias rides along."""
    d = world.size
    mesh = DeviceMesh(torch.arange(d))
    m, k, n = 512 * d, 8, 5
    with FusionDefinition() as fd:
        x = fd.define_tensor((-1, k), contiguity=True, dtype=DataType.Float)
        w = fd.define_tensor((n, k), contiguity=True, dtype=DataType.Float)
        bias = fd.define_tensor((n,), contiguity=True, dtype=DataType.Float)
        y = fd.ops.linear(x, w, bias)
        fd.add_output(y)
        shard_axis(x, 0, mesh)
        w.set_device_mesh(mesh)
        bias.set_device_mesh(mesh)
        y.set_device_mesh(mesh)
    full_x, full_w, full_b = (
        world.randn(*sh, seed=5 + i) for i, sh in enumerate([(m, k), (n, k), (n,)])
    )
    (y_local,) = fd.execute([shard_tensor(full_x, x, mesh), full_w, full_b])
    torch.testing.assert_close(
        y_local, torch.nn.functional.linear(full_x, full_w, full_b), rtol=1e-4, atol=1e-4
    )
    assert_pipelined(fd, "Allgather + linear")
    assert "chosen per call" in host_program(fd)


@pytest.mark.parametrize("chunks", [1, 2, 4])
@pytest.mark.parametrize("op", ["matmul", "linear"])
def test_gemm_reduce_scatter_over_row_chunks(world, chunks, op):
    d = world.size
    mesh = DeviceMesh(torch.arange(d))
    m, k, n = 8 * d, 4 * d, 6
    with FusionDefinition() as fd:
        x = fd.define_tensor((m, k), contiguity=True, dtype=DataType.Float)
        shape = (k, n) if op == "matmul" else (n, k)
        w = fd.define_tensor(shape, contiguity=True, dtype=DataType.Float)
        y = getattr(fd.ops, op)(x, w)
        fd.add_output(y)
        shard_axis(x, 1, mesh)
        shard_axis(w, 0 if op == "matmul" else 1, mesh)
        shard_axis(y, 0, mesh)
        y.outer_split(1, chunks)
        y.axis(1).parallelize(ParallelType.stream)
    full_x, full_w = world.randn(m, k, seed=8), world.randn(*shape, seed=9)
    (y_local,) = fd.execute([shard_tensor(full_x, x, mesh), shard_tensor(full_w, w, mesh)])
    expected = full_x @ full_w if op == "matmul" else full_x @ full_w.T
    torch.testing.assert_close(y_local, shard_tensor(expected, y, mesh), rtol=1e-4, atol=1e-4)
    assert_pipelined(fd, f"{op} + ReduceScatter")


@pytest.mark.parametrize("chunks", [1, 2])
def test_sequence_parallel_mlp_overlaps_both_linears(world, chunks):
    """Seed 003's MLP with its tokens sharded (sequence parallelism): the
    column-parallel linear all-gathers the tokens chunk by chunk, the
    row-parallel one reduce-scatters them chunk by chunk."""
    d = world.size
    mesh = DeviceMesh(torch.arange(d))
    t, e = 4 * d * chunks, 4 * d
    with FusionDefinition() as fd:
        x = fd.define_tensor((t, e), contiguity=True, dtype=DataType.Float)
        w0 = fd.define_tensor((4 * e, e), contiguity=True, dtype=DataType.Float)
        b0 = fd.define_tensor((4 * e,), contiguity=True, dtype=DataType.Float)
        w1 = fd.define_tensor((e, 4 * e), contiguity=True, dtype=DataType.Float)
        h = fd.ops.linear(x, w0, b0)
        out = fd.ops.linear(gelu(fd, h), w1)
        fd.add_output(out)
        shard_axis(x, 0, mesh)
        stream_split(x, 1, chunks)
        shard_axis(w0, 0, mesh)
        shard_axis(w1, 1, mesh)
        shard_axis(out, 0, mesh)
        stream_split(out, 1, chunks)
    xs, w0s, b0s, w1s = (
        world.randn(*shape, seed=10 + i)
        for i, shape in enumerate([(t, e), (4 * e, e), (4 * e,), (e, 4 * e)])
    )
    (out_local,) = fd.execute(
        [
            shard_tensor(xs, x, mesh),
            shard_tensor(w0s, w0, mesh),
            shard_tensor(b0s, b0, mesh),
            shard_tensor(w1s, w1, mesh),
        ]
    )
    expected = torch.nn.functional.linear(
        torch.nn.functional.gelu(torch.nn.functional.linear(xs, w0s, b0s)), w1s
    )
    torch.testing.assert_close(out_local, shard_tensor(expected, out, mesh), rtol=1e-4, atol=1e-4)
    program = host_program(fd)
    assert (
        "pipelined Allgather + linear" in program and "pipelined linear + ReduceScatter" in program
    )
    assert "communicate:" not in program


def test_chunk_count_that_does_not_divide_the_local_rows(world):
    d = world.size
    mesh = DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        a = fd.define_tensor((-1, 8), contiguity=True, dtype=DataType.Float)
        b = fd.define_tensor((8, 4), contiguity=True, dtype=DataType.Float)
        c = fd.ops.matmul(a, b)
        fd.add_output(c)
        shard_axis(a, 0, mesh)
        b.set_device_mesh(mesh)
        c.set_device_mesh(mesh)
        stream_split(c, 0, 4)
    with pytest.raises(nvfuse.InputError, match=r"T0: .*4 chunks of axis 0, but its 6 local rows"):
        fd.execute([world.randn(6, 8), world.randn(8, 4)])
    # The process and the fusion stay usable.
    (c_local,) = fd.execute([world.randn(8, 8, seed=1), world.randn(8, 4, seed=2)])
    assert c_local.shape == (8 * d, 4)


@pytest.mark.parametrize("op", ["matmul", "linear"])
def test_copy_engine_gemm_reduce_scatter(world, op):
    """The symm_mem backend's reduce-scatter: partial results pushed into
    their destination's symmetric memory, summed there (CUDA only)."""
    if world.device.type != "cuda":
        pytest.skip("symmetric memory is CUDA memory")
    import nvfuse.multidevice as md

    d = world.size
    mesh = DeviceMesh(torch.arange(d))
    m, k, n = 16 * d, 8 * d, 24
    with FusionDefinition() as fd:
        x = fd.define_tensor((m, k), contiguity=True, dtype=DataType.Float)
        shape = (k, n) if op == "matmul" else (n, k)
        w = fd.define_tensor(shape, contiguity=True, dtype=DataType.Float)
        y = getattr(fd.ops, op)(x, w)
        fd.add_output(y)
        shard_axis(x, 1, mesh)
        shard_axis(w, 0 if op == "matmul" else 1, mesh)
        shard_axis(y, 0, mesh)
    full_x, full_w = world.randn(m, k, seed=22), world.randn(*shape, seed=23)
    expected = full_x @ full_w if op == "matmul" else full_x @ full_w.T
    before = md.overlap_backend()
    md.set_overlap_backend("symm_mem")
    try:
        assert "ReduceScatter (copy engine)" in host_program(fd)
        for _ in range(3):  # the buffers are reused call after call
            (y_local,) = fd.execute([shard_tensor(full_x, x, mesh), shard_tensor(full_w, w, mesh)])
            torch.testing.assert_close(
                y_local, shard_tensor(expected, y, mesh), rtol=1e-4, atol=1e-4
            )
    finally:
        md.set_overlap_backend(before)


@pytest.mark.parametrize("op", ["matmul", "linear"])
def test_copy_engine_allgather_gemm(world, op):
    """The symm_mem backend: shards read from peers' symmetric memory, one
    source device per step (CUDA only)."""
    if world.device.type != "cuda":
        pytest.skip("symmetric memory is CUDA memory")
    import nvfuse.multidevice as md

    d = world.size
    mesh = DeviceMesh(torch.arange(d))
    m, k, n = 64 * d, 32, 48
    with FusionDefinition() as fd:
        x = fd.define_tensor((m, k), contiguity=True, dtype=DataType.Float)
        shape = (k, n) if op == "matmul" else (n, k)
        w = fd.define_tensor(shape, contiguity=True, dtype=DataType.Float)
        y = getattr(fd.ops, op)(x, w)
        fd.add_output(y)
        shard_axis(x, 0, mesh)
        w.set_device_mesh(mesh)
        y.set_device_mesh(mesh)
    full_x, full_w = world.randn(m, k, seed=20), world.randn(*shape, seed=21)
    expected = full_x @ full_w if op == "matmul" else full_x @ full_w.T
    before = md.overlap_backend()
    md.set_overlap_backend("symm_mem")
    try:
        assert "copy engine" in host_program(fd)
        for _ in range(3):  # the buffers are reused call after call
            (y_local,) = fd.execute([shard_tensor(full_x, x, mesh), full_w])
            torch.testing.assert_close(y_local, expected, rtol=1e-4, atol=1e-4)
    finally:
        md.set_overlap_backend(before)


def test_sequence_parallel_attention_block_overlaps_both_projections(world):
    """Seed 003's attention block with its tokens sharded: the qkv
    projection all-gathers the tokens chunk by chunk, the output projection
    reduce-scatters them chunk by chunk; heads stay sharded in between."""
    from test_sharded_attention import heads_of, torch_heads_of

    F = torch.nn.functional
    d = world.size
    b, s, h, dh = 2, 8 * d, 2 * d, 8
    e, t = h * dh, b * s
    mesh = DeviceMesh(torch.arange(d))
    with FusionDefinition() as fd:
        x = fd.define_tensor((t, e), contiguity=True, dtype=DataType.BFloat16)
        w_qkv = fd.define_tensor((3 * e, e), contiguity=True, dtype=DataType.BFloat16)
        w_out = fd.define_tensor((e, e), contiguity=True, dtype=DataType.BFloat16)
        qkv = fd.ops.reshape(fd.ops.linear(x, w_qkv), [b, s, h, 3 * dh])
        attn, _, _, _ = fd.ops.sdpfa_fwd(*heads_of(fd, qkv, dh), dropout_p=0.0, is_causal=True)
        merged = fd.ops.reshape(fd.ops.permute(attn, [0, 2, 1, 3]), [t, e])
        out = fd.ops.linear(merged, w_out)
        fd.add_output(out)
        shard_axis(x, 0, mesh)
        stream_split(x, 1, 2)
        shard_axis(w_qkv, 0, mesh)
        shard_axis(w_out, 1, mesh)
        shard_axis(out, 0, mesh)
        stream_split(out, 1, 2)
    xs, wq, wo = (
        world.randn(*shape, seed=70 + i).to(torch.bfloat16) / 4
        for i, shape in enumerate([(t, e), (3 * e, e), (e, e)])
    )
    (out_local,) = fd.execute(
        [shard_tensor(xs, x, mesh), shard_tensor(wq, w_qkv, mesh), shard_tensor(wo, w_out, mesh)]
    )
    qkv_full = F.linear(xs, wq).reshape(b, s, h, 3 * dh)
    y = F.scaled_dot_product_attention(*torch_heads_of(qkv_full, dh), is_causal=True)
    expected = F.linear(y.permute(0, 2, 1, 3).reshape(t, e), wo)
    torch.testing.assert_close(out_local, shard_tensor(expected, out, mesh), atol=3e-2, rtol=3e-2)
    program = host_program(fd)
    assert (
        "pipelined Allgather + linear" in program and "pipelined linear + ReduceScatter" in program
    )
    assert "communicate:" not in program, program


def test_benchmark_sequence_parallel_mlp_definition(world):
    """The definition benchmarks/multidevice/tp_blocks.py times as "SP MLP
    fwd": both projections pipelined, the result equal to torch's."""
    from test_sharded_attention import tp_definitions

    defs = tp_definitions()
    d = world.size
    tokens, hidden = 8 * d, 4 * d
    fd, handles = defs.mlp_forward(tokens, hidden, torch.float32, d, sequence_parallel=True)
    full = [
        world.randn(*shape, seed=80 + i)
        for i, shape in enumerate(
            [(tokens, hidden), (4 * hidden, hidden), (4 * hidden,), (hidden, 4 * hidden)]
        )
    ]
    (out_local,) = fd.execute([shard_tensor(t, h) for t, h in zip(full, handles)])
    module = defs.Mlp(*full[1:]).to(world.device)
    with torch.no_grad():
        expected = module(full[0])
    torch.testing.assert_close(out_local, shard_tensor(expected, handles[0]), rtol=1e-4, atol=1e-4)
    program = host_program(fd)
    assert (
        "pipelined Allgather + linear" in program and "pipelined linear + ReduceScatter" in program
    )


def wide_gemm(kind, rows, d, mesh):
    """An all-gather + linear with `rows` rows a device, or a linear +
    reduce-scatter with `rows` rows a destination, fp32."""
    m, n = rows * d, 48
    k = 32 * d
    with FusionDefinition() as fd:
        x = fd.define_tensor((m, k), contiguity=True, dtype=DataType.Float)
        w = fd.define_tensor((n, k), contiguity=True, dtype=DataType.Float)
        y = fd.ops.linear(x, w)
        fd.add_output(y)
        if kind == "allgather":
            shard_axis(x, 0, mesh)
            w.set_device_mesh(mesh)
            y.set_device_mesh(mesh)
        else:
            shard_axis(x, 1, mesh)
            shard_axis(w, 1, mesh)
            shard_axis(y, 0, mesh)
    return fd, (x, (m, k)), (w, (n, k)), y


@pytest.mark.parametrize("kind", ["allgather", "reduce_scatter"])
@pytest.mark.parametrize("wide", [True, False])
def test_auto_backend_takes_the_copy_engine_for_wide_gemms(world, monkeypatch, kind, wide):
    """The default "auto" backend: the copy-engine loop for GEMMs of enough
    rows a device (1024 for an all-gather, 2048 for a reduce-scatter) when
    the team's GPUs read each other's memory, the NCCL loop otherwise; the
    same result either way."""
    if world.device.type != "cuda":
        pytest.skip("symmetric memory is CUDA memory")
    import nvfuse.multidevice as md
    import nvfuse.multidevice.symmetric_memory as symmetric_memory

    assert md.overlap_backend() == "auto"
    copies = []
    hook = "_pull" if kind == "allgather" else "_push"
    real = getattr(symmetric_memory, hook)
    monkeypatch.setattr(
        symmetric_memory, hook, lambda *args: (copies.append(args[1]), real(*args))[1]
    )
    d = world.size
    mesh = DeviceMesh(torch.arange(d))
    wide_rows = 1024 if kind == "allgather" else 2048
    fd, (x, x_shape), (w, w_shape), y = wide_gemm(
        kind, wide_rows if wide else wide_rows // 2, d, mesh
    )
    full_x = world.randn(*x_shape, seed=30)
    full_w = world.randn(*w_shape, seed=31)
    expected = full_x @ full_w.T
    for _ in range(2):
        (y_local,) = fd.execute([shard_tensor(full_x, x, mesh), shard_tensor(full_w, w, mesh)])
        torch.testing.assert_close(y_local, shard_tensor(expected, y, mesh), rtol=1e-4, atol=1e-4)
    reachable = [
        answer
        for (_, device), answer in symmetric_memory._reachable.items()
        if device == world.device.index
    ]
    assert bool(copies) == (wide and bool(reachable) and all(reachable))
