"""stride_order and allocation domains: permuted and broadcast inputs are
accepted as ordinary strided tensors; outputs keep their logical shape with
the requested strides; the user never sees a permutation."""

import pytest
import torch

from nvfuse import DataType, FusionDefinition
from fusion_helpers import assert_close, run_fusion


def test_input_with_stride_order_accepts_a_transposed_tensor():
    x = torch.randn(6, 4).t()  # logical [4, 6], column-major
    with FusionDefinition() as fd:
        t = fd.define_tensor(
            shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, stride_order=[0, 1]
        )
        fd.add_output(fd.ops.neg(t))
    (out,) = fd.execute([x])
    assert_close(out, -x)


def test_from_pytorch_records_the_stride_order_of_a_permuted_tensor():
    x = torch.randn(2, 3, 4).permute(2, 0, 1)
    (out,), fd = run_fusion(lambda fd, t: fd.ops.exp(t), [x])
    assert "stride_order=[0, 2, 1]" in repr(fd)
    assert_close(out, x.exp())


def test_output_stride_order_gives_logical_shape_with_permuted_strides():
    x = torch.randn(3, 5)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(fd.ops.sin(t), stride_order=[0, 1])
    (out,) = fd.execute([x])
    assert out.shape == (3, 5)
    assert out.stride() == (1, 3)
    assert_close(out, x.sin())


def test_output_stride_order_rank_three():
    x = torch.randn(2, 3, 4)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(fd.ops.relu(t), stride_order=[1, 0, 2])
    (out,) = fd.execute([x])
    assert out.shape == (2, 3, 4)
    # axis 2 is outermost, then axis 0, then axis 1 (fastest).
    assert out.stride() == (3, 1, 6)
    assert_close(out, x.relu())


def test_row_major_stride_order_is_the_same_definition_as_none():
    def define(stride_order):
        with FusionDefinition() as fd:
            t = fd.define_tensor(shape=[-1, -1], contiguity=True, stride_order=stride_order)
            fd.add_output(fd.ops.abs(t))
        return fd.id()

    assert define([1, 0]) == define(None)


def test_broadcast_input_axis_accepts_size_one():
    x, y = torch.randn(4, 5), torch.randn(1, 5)
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], contiguity=True)
        b = fd.define_tensor(shape=[1, -1], contiguity=[None, True])
        fd.add_output(a * b)
    (out,) = fd.execute([x, y])
    assert_close(out, x * y)


def test_expanded_input_with_stride_zero():
    x = torch.randn(5).expand(3, 5)
    (out,), fd = run_fusion(lambda fd, t: fd.ops.mul(t, 2.0), [x])
    assert "contiguity=[None, True]" in repr(fd)
    assert_close(out, x * 2)


def test_non_contiguous_input_slice():
    x = torch.randn(6, 8)[:, ::2]
    (out,), _ = run_fusion(lambda fd, t: fd.ops.tanh(t), [x])
    assert_close(out, x.tanh())


def test_zero_dim_cpu_scalar_tensor():
    x, s = torch.randn(3, 3), torch.tensor(2.0)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        c = fd.define_tensor(shape=[], contiguity=[], dtype=DataType.Float, is_cpu=True)
        fd.add_output(t * c)
    (out,) = fd.execute([x, s])
    assert_close(out, x * s)


def test_output_that_is_an_input_is_returned_as_is():
    x = torch.randn(4)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(t)
    (out,) = fd.execute([x])
    assert out.data_ptr() == x.data_ptr()


def test_computed_output_never_aliases_an_input():
    x = torch.randn(4)
    (out,), _ = run_fusion(lambda fd, t: fd.ops.set(t), [x])
    assert out.data_ptr() != x.data_ptr()
    assert_close(out, x)


def test_add_output_with_alias_input_updates_the_input_in_place():
    x = torch.randn(5)
    expected = x + 1
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(fd.ops.add(t, 1.0), alias_input=t)
    outs = fd.execute([x])
    assert outs == []
    assert_close(x, expected)


def test_empty_tensor_input():
    x = torch.randn(0, 3)
    (out,), _ = run_fusion(lambda fd, t: fd.ops.exp(t), [x])
    assert out.shape == (0, 3)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_fixed_size_definition(dtype):
    x = torch.randn(2, 3).to(dtype)
    with FusionDefinition() as fd:
        t = fd.define_tensor(
            shape=[2, 3],
            contiguity=True,
            dtype=DataType.BFloat16 if dtype == torch.bfloat16 else DataType.Float,
        )
        fd.add_output(fd.ops.neg(t))
    (out,) = fd.execute([x])
    assert_close(out, -x)
