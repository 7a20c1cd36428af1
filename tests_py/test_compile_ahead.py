"""Compiling ahead (nvfuse.set_compile_ahead, on by default): a fusion of
several kernels compiles every kernel a call lacks side by side. The call
first runs a pass in which each missing kernel starts compiling on a thread
of its own while its segment runs on ATen, then the real pass, which waits
for the kernels. What the caller sees must not change: the first call's
results are the kernels' (bitwise those of later calls), fusions that
write an input in place or draw random numbers are not run twice, and
turning it off gives the same values."""

import pytest
import torch

import nvfuse
from nvfuse import FusionDefinition
from fusion_helpers import segments_dump
from workloads.multi_kernel import fresh_constant, kernel_matmul_kernel

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def _random_then_reduce(c):
    """rand_like (a kernel of its own) feeding a reduction kernel."""
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True)
        y = fd.ops.rand_like(x) * x * c
        fd.add_output(fd.ops.sum(y, [0]))
        fd.add_output(fd.ops.sum(y, [1]))
    return fd


def _in_place_then_matmul(c, d=None):
    """x += c in place (a kernel), then relu((x + c) @ w * d) (ATen, a
    kernel)."""
    d = c if d is None else d
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True)
        w = fd.define_tensor([-1, -1], contiguity=True)
        updated = x + c
        fd.add_output(updated, alias_input=x)
        fd.add_output(fd.ops.relu(fd.ops.matmul(updated, w) * d))
    return fd


@pytest.fixture
def fresh_kernels(monkeypatch):
    monkeypatch.setenv("NVFUSE_DISK_CACHE", "0")  # no kernel from an earlier run
    before = nvfuse.compile_ahead()
    nvfuse.set_compile_ahead(True)
    yield
    nvfuse.set_compile_ahead(before)


def test_the_setting_round_trips():
    before = nvfuse.compile_ahead()
    try:
        nvfuse.set_compile_ahead(False)
        assert not nvfuse.compile_ahead()
        nvfuse.set_compile_ahead(True)
        assert nvfuse.compile_ahead()
    finally:
        nvfuse.set_compile_ahead(before)


def test_the_segments_dump_says_which_fusions_compile_ahead():
    fd, _ = kernel_matmul_kernel(fresh_constant())
    text = segments_dump(fd, [torch.randn(8, 16), torch.randn(16, 16)])
    assert "its 2 kernels compile side by side" in text

    text = segments_dump(_random_then_reduce(fresh_constant()), [torch.randn(8, 16)])
    assert "its 2 kernels compile one after another" in text

    text = segments_dump(
        _in_place_then_matmul(fresh_constant()), [torch.randn(8, 16), torch.randn(16, 16)]
    )
    assert "one after another" in text


def test_cpu_inputs_run_once_and_match_torch(fresh_kernels):
    c = fresh_constant()
    fd, torch_fn = kernel_matmul_kernel(c)
    x, w = torch.randn(8, 16), torch.randn(16, 16)
    torch.testing.assert_close(fd.execute([x, w])[0], torch_fn(x, w))


@pytest.mark.gpu
@cuda
def test_the_first_call_runs_the_kernels(fresh_kernels):
    fd, torch_fn = kernel_matmul_kernel(fresh_constant())
    x = torch.randn(256, 512, device="cuda")
    w = torch.randn(512, 1024, device="cuda") / 32
    (first,) = fd.execute([x, w])
    code = fd.last_cuda_code()
    assert "nvfuse_pointwise" in code and "nvfuse_reduction" in code, code[:200]
    (later,) = fd.execute([x, w])
    assert torch.equal(first, later)  # kernels on both calls, not ATen on the first
    torch.testing.assert_close(first, torch_fn(x, w))


@pytest.mark.gpu
@cuda
def test_off_gives_the_same_values(fresh_kernels):
    c = fresh_constant()
    x = torch.randn(256, 512, device="cuda")
    w = torch.randn(512, 1024, device="cuda") / 32
    fd, _ = kernel_matmul_kernel(c)
    (ahead,) = fd.execute([x, w])
    nvfuse.set_compile_ahead(False)
    fd_off, _ = kernel_matmul_kernel(c * (1 + 1e-7))  # new kernels, compiled in turn
    (in_turn,) = fd_off.execute([x, w])
    torch.testing.assert_close(ahead, in_turn)


@pytest.mark.gpu
@cuda
def test_random_numbers_are_drawn_once(fresh_kernels):
    fd = _random_then_reduce(fresh_constant())
    x = torch.randn(128, 256, device="cuda")
    torch.manual_seed(7)
    first = fd.execute([x])
    after_first = torch.cuda.get_rng_state()
    torch.manual_seed(7)
    again = fd.execute([x])
    assert all(torch.equal(a, b) for a, b in zip(first, again))
    assert torch.equal(after_first, torch.cuda.get_rng_state())


@pytest.mark.gpu
@cuda
def test_an_input_updated_in_place_is_updated_once(fresh_kernels):
    # The in-place kernel compiled by a first fusion, the second kernel of
    # the next one new: a first pass would run the in-place kernel (which
    # writes x itself) before the real pass runs it again.
    c, d = fresh_constant(), fresh_constant()
    x = torch.randn(64, 128, device="cuda")
    w = torch.randn(128, 64, device="cuda") / 16
    _in_place_then_matmul(c).execute([x.clone(), w])
    x0 = x.clone()
    (out,) = _in_place_then_matmul(c, d).execute([x, w])
    torch.testing.assert_close(x, x0 + c)
    torch.testing.assert_close(out, torch.relu(((x0 + c) @ w) * d))


def _many_kernels(c, layers):
    """`layers` x (matmul, then a pointwise kernel of its own constant)."""
    with FusionDefinition() as fd:
        h = fd.define_tensor([-1, -1], contiguity=True)
        w = fd.define_tensor([-1, -1], contiguity=True)
        for i in range(layers):
            h = fd.ops.tanh(fd.ops.matmul(h, w) * (c + i))
        fd.add_output(h)

    def torch_fn(h, w):
        for i in range(layers):
            h = torch.tanh((h @ w) * (c + i))
        return h

    return fd, torch_fn


@pytest.mark.gpu
@cuda
def test_more_kernels_than_compile_slots(fresh_kernels):
    fd, torch_fn = _many_kernels(fresh_constant(), 12)
    h = torch.randn(64, 128, device="cuda")
    w = torch.randn(128, 128, device="cuda") / 12
    (first,) = fd.execute([h, w])
    assert fd.last_cuda_code().count("nvfuse_pointwise") >= 12
    (later,) = fd.execute([h, w])
    assert torch.equal(first, later)
    torch.testing.assert_close(first, torch_fn(h, w))
