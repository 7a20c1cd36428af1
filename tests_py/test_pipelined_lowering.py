"""The pipelined lowerings of all-gather + GEMM and GEMM + reduce-scatter
(multidevice/runtime/host/), checked on the host program as text and as
structure, in one process: building a sharded fusion's program needs no
world and no GPU."""

import pytest
import torch

import nvfuse
import nvfuse.multidevice
from nvfuse import DataType, FusionDefinition, ParallelType
from nvfuse.multidevice import DeviceMesh

D = 4
MESH = DeviceMesh(torch.arange(D))

LOOP_BODY_ALLGATHER = [
    "SetWorkerStream",
    "ViewChunk",
    "ViewChunk",
    "PostCommunication",
    "WaitCommunication",
    "ViewChunk",
    "Gemm",
]
LOOP_BODY_REDUCE_SCATTER = [
    "SetWorkerStream",
    "ViewChunk",
    "ViewChunk",
    "Gemm",
    "ViewChunk",
    "PostCommunication",
]


def shard(t, axis, mesh=MESH):
    t.set_device_mesh(mesh)
    t.outer_split(axis, mesh.size)
    t.axis(axis).parallelize(ParallelType.mesh_x)


def stream_split(t, axis, chunks):
    t.outer_split(axis, chunks)
    t.axis(axis).parallelize(ParallelType.stream)


def allgather_matmul(chunks=None, mesh=MESH, m=4096):
    with FusionDefinition() as fd:
        a = fd.define_tensor((m, 256), contiguity=True, dtype=DataType.BFloat16)
        b = fd.define_tensor((256, 512), contiguity=True, dtype=DataType.BFloat16)
        c = fd.ops.matmul(a, b)
        fd.add_output(c)
        shard(a, 0, mesh)
        b.set_device_mesh(mesh)
        c.set_device_mesh(mesh)
        if chunks is not None:
            stream_split(c, 0, chunks)
    return fd


def linear_reduce_scatter(chunks=None):
    with FusionDefinition() as fd:
        x = fd.define_tensor((4096, 1024), contiguity=True, dtype=DataType.BFloat16)
        w = fd.define_tensor((512, 1024), contiguity=True, dtype=DataType.BFloat16)
        y = fd.ops.linear(x, w)
        fd.add_output(y)
        shard(x, 1)
        shard(w, 1)
        shard(y, 0)
        if chunks is not None:
            stream_split(y, 1, chunks)
    return fd


def outline(fd):
    return nvfuse._C.host_outline(fd.id())


def loop_of(fd):
    """The pipeline's top-level instructions and its loop body."""
    steps = outline(fd)
    top = [kind for depth, kind in steps if depth == 1]
    body = [kind for depth, kind in steps if depth == 2]
    return top, body


def test_allgather_matmul_is_the_seed_pipeline():
    fd = allgather_matmul(chunks=4)
    assert [kind for depth, kind in outline(fd) if depth == 0] == ["pipeline"]
    top, body = loop_of(fd)
    assert top == [
        "GetCurrentStream",
        "Allocate",
        "Allocate",
        "WaitStreams",
        "ForChunks",
        "RestoreStream",
        "WaitStreams",
    ]
    assert body == LOOP_BODY_ALLGATHER
    text = nvfuse._C.host_program(fd.id())
    assert "pipelined Allgather + matmul (chunks: 4 from a stream split" in text
    assert "SetCurrentStream to stream ( 1 + i % streams )" in text
    assert "Communication Allgather (team = mesh, input = T0_i, output = T3_i)" in text
    assert "T2_i = matmul( T3_i, T1 )" in text


def test_matmul_reduce_scatter_waits_for_its_communications_after_the_loop():
    fd = linear_reduce_scatter(chunks=2)
    top, body = loop_of(fd)
    assert top == [
        "GetCurrentStream",
        "Allocate",
        "Allocate",
        "WaitStreams",
        "ForChunks",
        "RestoreStream",
        "WaitCommunication",
        "WaitStreams",
    ]
    assert body == LOOP_BODY_REDUCE_SCATTER
    assert "pipelined linear + ReduceScatter (chunks: 2 from a stream split" in (
        nvfuse._C.host_program(fd.id())
    )


def test_without_a_stream_axis_the_chunks_are_chosen_per_call():
    assert "chosen per call" in nvfuse._C.host_program(allgather_matmul().id())
    assert "chosen per call" in nvfuse._C.host_program(linear_reduce_scatter().id())


def test_another_reader_of_the_sharded_operand_gets_its_own_gather():
    """A sum over the same sharded operand reads its own Allgather; the
    matmul's is still pipelined."""
    with FusionDefinition() as fd:
        a = fd.define_tensor((64, 16), contiguity=True, dtype=DataType.Float)
        b = fd.define_tensor((16, 8), contiguity=True, dtype=DataType.Float)
        c = fd.ops.matmul(a, b)
        s = fd.ops.sum(a, [1])
        fd.add_output(c)
        fd.add_output(s)
        shard(a, 0)
        b.set_device_mesh(MESH)
        c.set_device_mesh(MESH)
        s.set_device_mesh(MESH)
    kinds = [kind for depth, kind in outline(fd) if depth == 0]
    assert sorted(kinds) == ["communicate", "compute", "pipeline"]


def test_bias_after_a_row_parallel_matmul_runs_after_the_loop():
    """The row-parallel matmul's partial result feeds only its
    ReduceScatter; the bias, added to the combined rows, is a compute step
    after the loop."""
    with FusionDefinition() as fd:
        x = fd.define_tensor((64, 16), contiguity=True, dtype=DataType.Float)
        w = fd.define_tensor((16, 8), contiguity=True, dtype=DataType.Float)
        bias = fd.define_tensor((8,), contiguity=True, dtype=DataType.Float)
        p = fd.ops.matmul(x, w)
        y = fd.ops.add(p, bias)
        fd.add_output(y)
        shard(x, 1)
        shard(w, 0)
        shard(p, 0)
        bias.set_device_mesh(MESH)
        shard(y, 0)
    kinds = [kind for depth, kind in outline(fd) if depth == 0]
    assert kinds == ["pipeline", "compute"], kinds


def test_unsorted_mesh_is_not_pipelined():
    mesh = DeviceMesh([1, 0, 3, 2])
    kinds = [kind for depth, kind in outline(allgather_matmul(2, mesh)) if depth == 0]
    assert kinds == ["communicate", "compute"]


def test_chunk_count_that_cannot_divide_the_constant_rows_is_a_definition_error():
    fd = allgather_matmul(chunks=3, m=4 * D)
    with pytest.raises(nvfuse.DefinitionError, match=r"T0: the stream split asks for 3 chunks"):
        nvfuse._C.host_program(fd.id())


def test_stream_axis_must_be_a_split_or_logical_axis():
    with FusionDefinition() as fd:
        a = fd.define_tensor((64, 16), contiguity=True, dtype=DataType.Float)
        fd.add_output(fd.ops.neg(a))
        a.set_device_mesh(MESH)
        a.outer_split(0, 4)
        a.split(1, 2)  # inner split of the per-chunk rows
        a.axis(2).parallelize(ParallelType.stream)
    with pytest.raises(nvfuse.DefinitionError, match="ParallelType.stream"):
        nvfuse._C.host_program(fd.id())


def test_host_ir_dump_prints_the_pipeline(capfd):
    before = nvfuse.get_dump()
    nvfuse.set_dump("host_ir")
    try:
        fd = allgather_matmul(chunks=2, m=2048)
        nvfuse._C.host_program(fd.id())
    finally:
        nvfuse.set_dump(before)
    err = capfd.readouterr().err
    assert "pipelined Allgather + matmul" in err and "FOR i in range(chunks):" in err


@pytest.fixture
def symm_mem_backend():
    before = nvfuse.multidevice.overlap_backend()
    nvfuse.multidevice.set_overlap_backend("symm_mem")
    yield
    nvfuse.multidevice.set_overlap_backend(before)


def test_copy_engine_backend_loops_over_source_devices(symm_mem_backend):
    fd = allgather_matmul(chunks=4)
    top, body = loop_of(fd)
    assert top == [
        "GetCurrentStream",
        "Allocate",
        "Allocate",
        "WaitStreams",
        "SetStream",
        "ViewChunk",
        "Gemm",
        "SetStream",
        "PublishShard",
        "ForChunks",
        "RestoreStream",
        "WaitStreams",
    ]
    assert body == [
        "SetStream",
        "PullShard",
        "RecordEvent",
        "SetStream",
        "WaitEvent",
        "ViewChunk",
        "Gemm",
    ]
    text = nvfuse._C.host_program(fd.id())
    assert "pipelined Allgather (copy engine) + matmul" in text
    assert "one per source device, this one first; worker streams: 2" in text
    assert "FOR i in range(1, chunks):" in text


def test_copy_engine_reduce_scatter_pushes_partials_then_sums(symm_mem_backend):
    fd = linear_reduce_scatter(chunks=2)
    top, body = loop_of(fd)
    assert top == [
        "GetCurrentStream",
        "Allocate",
        "Allocate",
        "ReservePartials",
        "WaitStreams",
        "SetStream",
        "Barrier",
        "ForChunks",
        "SetStream",
        "Barrier",
        "SumPartials",
        "RestoreStream",
        "WaitStreams",
    ]
    assert body == [
        "SetStream",
        "ViewChunk",
        "ViewChunk",
        "Gemm",
        "RecordEvent",
        "SetStream",
        "WaitEvent",
        "PushPartial",
    ]
    assert "pipelined linear + ReduceScatter (copy engine)" in nvfuse._C.host_program(fd.id())


def test_overlap_backend_names_the_choices():
    assert nvfuse.multidevice.overlap_backend() == "auto"
    with pytest.raises(nvfuse.DefinitionError, match='"auto", "nccl" and "symm_mem"'):
        nvfuse.multidevice.set_overlap_backend("gloo")
    assert nvfuse.multidevice.overlap_backend() == "auto"
    for name in ("nccl", "symm_mem", "auto"):
        nvfuse.multidevice.set_overlap_backend(name)
        assert nvfuse.multidevice.overlap_backend() == name


def test_auto_backend_prints_both_loops():
    """Under "auto" the host program shows the c10d loop (CPU tensors,
    thin GEMMs, GPUs without peer access) and the copy-engine loop that
    replaces it where it pays off; host_outline stays the c10d loop."""
    fd = allgather_matmul(chunks=2)
    text = nvfuse._C.host_program(fd.id())
    assert "pipelined Allgather + matmul" in text
    assert 'where the copy engine pays off (overlap backend "auto")' in text
    assert "pipelined Allgather (copy engine) + matmul" in text
    top, _ = loop_of(fd)
    assert "PublishShard" not in top
