"""The pipelined stream loop on a one-device mesh, in a one-process world:
for S > 1 chunks its results equal the unchunked computation, and on a GPU
`execute` returns while the GPU is still busy (stream waits are events,
never a CPU synchronization). The CPU run (Gloo) needs no GPU."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from test_multidevice_launch import free_port

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = r"""
import sys, time
import torch
import nvfuse
import nvfuse.multidevice as md
from nvfuse import DataType, FusionDefinition, ParallelType
from nvfuse.multidevice import DeviceMesh

device = sys.argv[1]
md.init()
mesh = DeviceMesh(torch.arange(1))


def shard(t, axis):
    t.set_device_mesh(mesh)
    t.outer_split(axis, 1)
    t.axis(axis).parallelize(ParallelType.mesh_x)


def allgather_matmul(chunks):
    with FusionDefinition() as fd:
        a = fd.define_tensor((-1, -1), contiguity=True, dtype=DataType.Float)
        b = fd.define_tensor((-1, -1), contiguity=True, dtype=DataType.Float)
        c = fd.ops.matmul(a, b)
        fd.add_output(c)
        shard(a, 0)
        b.set_device_mesh(mesh)
        c.set_device_mesh(mesh)
        c.outer_split(0, chunks)
        c.axis(0).parallelize(ParallelType.stream)
    return fd


def matmul_reduce_scatter(chunks):
    with FusionDefinition() as fd:
        a = fd.define_tensor((-1, -1), contiguity=True, dtype=DataType.Float)
        b = fd.define_tensor((-1, -1), contiguity=True, dtype=DataType.Float)
        c = fd.ops.matmul(a, b)
        fd.add_output(c)
        shard(a, 1)
        shard(b, 0)
        shard(c, 0)
        c.outer_split(1, chunks)
        c.axis(1).parallelize(ParallelType.stream)
    return fd


g = torch.Generator().manual_seed(0)
a = torch.randn(1024, 256, generator=g).to(device)
b = torch.randn(256, 512, generator=g).to(device)
for make, kind in [(allgather_matmul, "Allgather + matmul"), (matmul_reduce_scatter, "matmul + ReduceScatter")]:
    serial = make(1)
    (expected,) = serial.execute([a, b])
    torch.testing.assert_close(expected, a @ b, rtol=1e-4, atol=1e-4)
    for chunks in (2, 4, 8):
        fd = make(chunks)
        assert f"pipelined {kind}" in nvfuse._C.host_program(fd.id())
        (out,) = fd.execute([a, b])
        # cuBLAS may pick another kernel for the thinner chunks: equal up
        # to float32 rounding of a 256-term sum.
        torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-4)
    if device == "cuda":
        # A long kernel holds the caller's stream: execute must queue the
        # loop behind it and return, not wait for it.
        torch.cuda.synchronize()
        torch.cuda._sleep(2_000_000_000)
        start = time.perf_counter()
        (out,) = fd.execute([a, b])
        host_s = time.perf_counter() - start
        still_busy = not torch.cuda.current_stream().query()
        torch.cuda.synchronize()
        assert still_busy, f"execute returned after the GPU finished ({host_s:.3f} s)"
        torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-4)
        print(f"{kind}: execute returned in {host_s * 1e3:.2f} ms with the GPU busy")
print("ok")
"""


def run_one_process(device, tmp_path):
    script = tmp_path / "stream_loop.py"
    script.write_text(SCRIPT)
    env = dict(os.environ)
    env.update(
        RANK="0",
        WORLD_SIZE="1",
        LOCAL_RANK="0",
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(free_port()),
        NVFUSE_COMM_TIMEOUT_S="60",
    )
    result = subprocess.run(
        [sys.executable, str(script), device],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0 and "ok" in result.stdout, output[-4000:]
    return result.stdout


def test_stream_loop_on_one_cpu_process(tmp_path):
    run_one_process("cpu", tmp_path)


@pytest.mark.gpu
def test_stream_loop_on_one_gpu_does_not_block_the_cpu(tmp_path):
    assert torch.cuda.is_available()
    out = run_one_process("cuda", tmp_path)
    assert out.count("with the GPU busy") == 2, out
