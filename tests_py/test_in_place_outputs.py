"""Outputs that update an input in place (add_output(t, alias_input=x)):
the pointwise kernel writes x itself where that is safe (runtime/kernel_io.h,
KernelIo::in_place_target), instead of a fresh tensor copied into x after
it; elsewhere the copy stays. GPU only: the CPU path runs on the reference
evaluator, which always copies."""

import pytest
import torch

from nvfuse import DataType, FusionDefinition

pytestmark = pytest.mark.gpu
LR = 0.01


def _sgd_step(dtype=DataType.Float, stride_order=None):
    with FusionDefinition() as fd:
        p = fd.define_tensor([-1, -1], contiguity=True, dtype=dtype, stride_order=stride_order)
        g = fd.define_tensor([-1, -1], contiguity=True, dtype=dtype)
        step = fd.ops.cast(p, DataType.Float) - LR * fd.ops.cast(g, DataType.Float)
        fd.add_output(fd.ops.cast(step, dtype), alias_input=p)
    return fd


def _peak_growth(fn):
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    start = torch.cuda.memory_allocated()
    fn()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - start


@pytest.mark.parametrize("dtype", [DataType.Float, DataType.BFloat16], ids=str)
def test_the_kernel_writes_the_updated_input_itself(dtype):
    torch_dtype = torch.float32 if dtype == DataType.Float else torch.bfloat16
    p = torch.randn(1024, 1024, device="cuda").to(torch_dtype)
    g = torch.randn_like(p)
    expected = (p.float() - LR * g.float()).to(torch_dtype)
    fd = _sgd_step(dtype)
    address = p.data_ptr()
    assert fd.execute([p, g]) == []  # compile and first run
    p.copy_((expected.float() + LR * g.float()).to(torch_dtype))
    # no output-sized allocation: the kernel wrote p
    assert _peak_growth(lambda: fd.execute([p, g])) < p.numel() * p.element_size()
    assert p.data_ptr() == address
    torch.testing.assert_close(p.float(), expected.float(), rtol=1.6e-2, atol=1e-2)


def test_a_column_major_input_is_updated():
    # written directly where the output is laid out as the input, else
    # through a copy: either way the caller's strides are kept
    base = torch.randn(512, 256, device="cuda")
    p = base.t()  # 256 x 512, column-major
    g = torch.randn(256, 512, device="cuda")
    expected = p - LR * g
    fd = _sgd_step(stride_order=[0, 1])
    fd.execute([p, g])
    torch.testing.assert_close(p, expected)
    torch.testing.assert_close(base.t(), expected)


def test_the_same_tensor_passed_twice_is_updated_through_a_copy():
    p = torch.randn(300, 400, device="cuda")
    expected = p * (1 - LR)
    fd = _sgd_step()
    fd.execute([p, p])
    torch.testing.assert_close(p, expected)


def test_overlapping_views_are_updated_through_a_copy():
    # p and g are shifted views of one buffer: a thread could read an
    # element of g after the thread owning it wrote p there
    buffer = torch.randn(2, 1000, device="cuda")
    flat = buffer.view(-1)
    p = flat[:1000].view(1, 1000)
    g = flat[500:1500].view(1, 1000)
    expected = p - LR * g
    fd = _sgd_step()
    fd.execute([p, g])
    torch.testing.assert_close(p, expected)


def test_an_input_also_returned_as_is_is_updated_through_a_copy():
    # the kernel does not write the input it returns as is; the caller gets
    # that tensor back, updated
    p = torch.randn(128, 128, device="cuda")
    g = torch.randn(128, 128, device="cuda")
    expected = p - LR * g
    with FusionDefinition() as fd:
        a = fd.from_pytorch(p)
        b = fd.from_pytorch(g)
        fd.add_output(a - LR * b, alias_input=a)
        fd.add_output(a)
    (returned,) = fd.execute([p, g])
    assert returned.data_ptr() == p.data_ptr()
    torch.testing.assert_close(p, expected)
