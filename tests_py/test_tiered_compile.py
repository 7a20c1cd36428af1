"""Tiered compilation (nvfuse.set_tiered_compile, NVFUSE_TIERED_COMPILE=1): a
kernel that no cache has compiles on a background thread while its segment
runs on the ATen reference evaluator, and later calls launch it once it is
compiled. Results agree on both tiers (random ops draw the same Philox
values for the same generator state on both), and a CUDA graph capture
waits for the kernel rather than record the reference path."""

import itertools
import time

import pytest
import torch

import nvfuse
from nvfuse import FusionDefinition

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
_fresh = itertools.count(1)


@pytest.fixture
def tiered(monkeypatch):
    monkeypatch.setenv("NVFUSE_DISK_CACHE", "0")  # no kernel from an earlier run
    before = nvfuse.tiered_compile()
    nvfuse.set_tiered_compile(True)
    yield
    nvfuse.set_tiered_compile(before)


def _softmax():
    """A softmax with a scale of its own: a kernel no cache holds."""
    scale = 1.0 + next(_fresh) / 1024 + time.time_ns() % 1000 / 1e7
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True)
        y = x * scale
        m = fd.ops.max(y, [1], keepdim=True)
        e = fd.ops.exp(y - m)
        fd.add_output(e / fd.ops.sum(e, [1], keepdim=True))
    return fd, scale


def _dropout():
    keep = 0.5 + next(_fresh) / 4096 + time.time_ns() % 1000 / 1e7
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True)
        fd.add_output(fd.ops.where(fd.ops.lt(fd.ops.rand_like(x), keep), x / keep, 0.0))
    return fd


def _until_the_kernel_runs(fd, inputs, seconds=60):
    """Calls until a generated kernel ran; the outputs of that call."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        outputs = fd.execute(inputs)
        if "nvfuse_" in fd.last_cuda_code():
            return outputs
        time.sleep(0.01)
    raise AssertionError("the kernel never finished compiling")


def test_the_setting_round_trips():
    before = nvfuse.tiered_compile()
    try:
        nvfuse.set_tiered_compile(True)
        assert nvfuse.tiered_compile()
        nvfuse.set_tiered_compile(False)
        assert not nvfuse.tiered_compile()
    finally:
        nvfuse.set_tiered_compile(before)


def test_cpu_inputs_are_unaffected(tiered):
    fd, scale = _softmax()
    x = torch.randn(8, 32)
    torch.testing.assert_close(fd.execute([x])[0], torch.softmax(x * scale, -1))


@pytest.mark.gpu
@cuda
def test_first_calls_run_the_reference_path_then_the_kernel(tiered):
    fd, scale = _softmax()
    x = torch.randn(512, 1000, device="cuda")
    want = torch.softmax(x * scale, -1)
    first = fd.execute([x])[0]
    assert "nvfuse_" not in fd.last_cuda_code()  # no kernel yet: the reference path ran
    torch.testing.assert_close(first, want)
    torch.testing.assert_close(_until_the_kernel_runs(fd, [x])[0], want)


@pytest.mark.gpu
@cuda
def test_random_values_are_the_same_on_both_tiers(tiered):
    fd = _dropout()
    x = torch.randn(256, 1024, device="cuda")
    torch.manual_seed(11)
    reference = fd.execute([x])[0]
    assert "nvfuse_" not in fd.last_cuda_code()
    _until_the_kernel_runs(fd, [x])
    torch.manual_seed(11)
    kernel = fd.execute([x])[0]
    assert "nvfuse_" in fd.last_cuda_code()
    assert torch.equal(kernel == 0, reference == 0)  # the same elements dropped
    torch.testing.assert_close(kernel, reference)  # x / keep: rounding may differ by an ulp


@pytest.mark.gpu
@cuda
def test_a_cuda_graph_capture_waits_for_the_kernel(tiered):
    fd, scale = _softmax()
    x = torch.randn(64, 700, device="cuda")
    want = torch.softmax(x * scale, -1)
    for _ in range(3):  # a plain call (the reference path), the capture, a replay
        torch.testing.assert_close(fd.execute([x], cuda_graph=True)[0], want)
    assert "nvfuse_" in fd.last_cuda_code()  # the capture recorded the kernel
