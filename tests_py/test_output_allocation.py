"""CUDA outputs come from the allocator torch.cuda uses directly, not
through at::empty_strided's operator (runtime/output_allocation.h): the
allocator still sees every one, its statistics count them, memory pools
and CUDA-graph captures still route them, and a pluggable allocator put in
the caching allocator's place makes them. GPU only: the CPU path
allocates through ATen's operator."""

import os
import shutil
import subprocess
import sys

import pytest
import torch

from nvfuse import DataType, FusionDefinition, _C

pytestmark = pytest.mark.gpu

ROWS, COLUMNS = 1024, 4096  # outputs of 16 MB: past the shared small outputs


def _two_large_outputs():
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True, dtype=DataType.Float)
        fd.add_output(x * 2.0)
        fd.add_output(x + 1.0)
    return fd


def _input():
    return torch.randn(ROWS, COLUMNS, device="cuda")


def test_the_allocator_counts_the_outputs_and_takes_them_back():
    fd, x = _two_large_outputs(), _input()
    fd.execute([x])  # compiles
    torch.cuda.synchronize()
    before = torch.cuda.memory_stats()
    outputs = fd.execute([x])
    after = torch.cuda.memory_stats()
    assert after["allocation.all.allocated"] - before["allocation.all.allocated"] == 2
    assert after["allocated_bytes.all.current"] - before["allocated_bytes.all.current"] == (
        2 * ROWS * COLUMNS * 4
    )
    assert all(o.device == x.device for o in outputs)
    torch.testing.assert_close(outputs[0], x * 2.0)
    torch.testing.assert_close(outputs[1], x + 1.0)
    del outputs
    assert (
        torch.cuda.memory_stats()["allocated_bytes.all.current"]
        == (before["allocated_bytes.all.current"])
    )


def _inside(pointer, segments):
    return any(s["address"] <= pointer < s["address"] + s["total_size"] for s in segments)


def test_outputs_come_from_the_memory_pool_in_use():
    fd, x = _two_large_outputs(), _input()
    fd.execute([x])
    pool = torch.cuda.MemPool()
    with torch.cuda.use_mem_pool(pool):
        outputs = fd.execute([x])
    segments = pool.snapshot()
    assert all(_inside(o.data_ptr(), segments) for o in outputs)
    torch.testing.assert_close(outputs[0], x * 2.0)
    del outputs


def test_outputs_made_under_a_cuda_graph_replay_with_the_graph():
    fd, x = _two_large_outputs(), _input()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        fd.execute([x])  # compiles outside the capture
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        outputs = fd.execute([x])
    x.copy_(torch.full_like(x, 3.0))
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(outputs[0], torch.full_like(x, 6.0))
    torch.testing.assert_close(outputs[1], torch.full_like(x, 4.0))


def test_shared_small_outputs_still_come_from_the_allocator():
    before_sharing = _C.shared_small_outputs()
    _C.set_shared_small_outputs(True)
    try:
        with FusionDefinition() as fd:
            x = fd.define_tensor([-1, -1], contiguity=True, dtype=DataType.Float)
            fd.add_output(fd.ops.sum(x, [0]))
            fd.add_output(fd.ops.sum(x * x, [0]))
        x = torch.randn(64, 32, device="cuda")
        fd.execute([x])
        pool = torch.cuda.MemPool()
        with torch.cuda.use_mem_pool(pool):
            total, squares = fd.execute([x])
        assert _inside(total.data_ptr(), pool.snapshot())
        torch.testing.assert_close(total, x.sum(0))
        torch.testing.assert_close(squares, (x * x).sum(0))
    finally:
        _C.set_shared_small_outputs(before_sharing)


_PLUGGABLE_ALLOCATOR = r"""
#include <cuda_runtime_api.h>
#include <sys/types.h>
static long allocations = 0;
extern "C" void* counted_malloc(ssize_t size, int device, cudaStream_t stream) {
  void* p = nullptr;
  cudaMalloc(&p, size);
  ++allocations;
  return p;
}
extern "C" void counted_free(void* p, ssize_t size, int device, cudaStream_t stream) {
  cudaFree(p);
}
extern "C" long counted_allocations() { return allocations; }
"""

_PLUGGABLE_RUN = r"""
import ctypes, sys, torch
from nvfuse import DataType, FusionDefinition
library = sys.argv[1]
allocator = torch.cuda.memory.CUDAPluggableAllocator(library, "counted_malloc", "counted_free")
torch.cuda.memory.change_current_allocator(allocator)
count = ctypes.CDLL(library).counted_allocations
count.restype = ctypes.c_long
x = torch.randn(256, 512, device="cuda")
with FusionDefinition() as fd:
    t = fd.define_tensor([-1, -1], contiguity=True, dtype=DataType.Float)
    fd.add_output(t * 2.0)
    fd.add_output(t + 1.0)
fd.execute([x])
torch.cuda.synchronize()
before = count()
a, b = fd.execute([x])
torch.cuda.synchronize()
assert count() - before == 2, (before, count())
torch.testing.assert_close(a, x * 2.0)
torch.testing.assert_close(b, x + 1.0)
print("OK")
"""


def test_outputs_come_from_a_pluggable_allocator_put_in_torchs_place(tmp_path):
    """torch.cuda.memory.change_current_allocator replaces the caching
    allocator where only torch's CUDA library reads it: the outputs still
    come from the replacement. In a process of its own (torch refuses the
    swap once its allocator has allocated)."""
    cuda_home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    compiler = shutil.which("g++")
    if compiler is None or not os.path.exists(os.path.join(cuda_home, "include")):
        pytest.skip("needs g++ and the CUDA headers to build the allocator")
    source = tmp_path / "counted.cpp"
    source.write_text(_PLUGGABLE_ALLOCATOR)
    library = tmp_path / "counted.so"
    subprocess.run(
        [
            compiler,
            "-shared",
            "-fPIC",
            str(source),
            "-o",
            str(library),
            f"-I{cuda_home}/include",
            f"-L{cuda_home}/lib64",
            f"-Wl,-rpath,{cuda_home}/lib64",
            "-lcudart",
        ],
        check=True,
    )
    script = tmp_path / "run.py"
    script.write_text(_PLUGGABLE_RUN)
    result = subprocess.run(
        [sys.executable, str(script), str(library)], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0 and "OK" in result.stdout, result.stderr[-3000:]
