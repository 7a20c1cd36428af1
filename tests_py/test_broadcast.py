"""broadcast_in_dim, broadcast and expand against torch on the CPU path."""

import pytest
import torch

import nvfuse
from nvfuse import DataType, FusionDefinition
from fusion_helpers import assert_close, run_fusion


def test_broadcast_in_dim_with_a_literal_shape():
    x = torch.randn(4)
    (out,), _ = run_fusion(
        lambda fd, t: fd.ops.broadcast_in_dim(t, [3, 4], broadcast_dims=[1]), [x]
    )
    assert_close(out, x.expand(3, 4))


def test_broadcast_in_dim_with_a_vector_of_symbolic_sizes():
    x = torch.randn(5)

    def build(fd, t, rows):
        shape = fd.define_vector([rows, 5])
        return fd.ops.broadcast_in_dim(t, shape, [1])

    (out,), _ = run_fusion(build, [x, 3])
    assert_close(out, x.expand(3, 5))


def test_broadcast_in_dim_keeps_size_one_axes_when_shape_says_one():
    x = torch.randn(2, 3)
    (out,), _ = run_fusion(lambda fd, t: fd.ops.broadcast_in_dim(t, [2, 3, 1], [0, 1]), [x])
    assert_close(out, x.unsqueeze(-1))


def test_broadcast_inserts_size_one_axes():
    x = torch.randn(3, 4)
    (out,), _ = run_fusion(lambda fd, t: fd.ops.broadcast(t, [True, False, True, False]), [x])
    assert_close(out, x[None, :, None, :])


def test_expand_grows_broadcast_axes_and_keeps_minus_one():
    x = torch.randn(1, 4)
    (out,), _ = run_fusion(lambda fd, t: fd.ops.expand(t, [6, -1]), [x])
    assert_close(out, x.expand(6, 4))


def test_expanded_output_is_stride_zero_like_torch_expand():
    x = torch.randn(1, 4)
    (out,), _ = run_fusion(lambda fd, t: fd.ops.expand(t, [6, -1]), [x])
    assert out.stride() == (0, 1)


def test_broadcast_then_add_row_vector():
    x, row = torch.randn(5, 8), torch.randn(8)
    (out,), _ = run_fusion(
        lambda fd, t, r: fd.ops.add(t, fd.ops.broadcast_in_dim(r, [5, 8], [1])), [x, row]
    )
    assert_close(out, x + row)


def test_broadcast_in_dim_with_wrong_length_is_a_definition_error():
    with pytest.raises(nvfuse.DefinitionError, match="broadcast_dims has 2 entries"):
        run_fusion(lambda fd, t: fd.ops.broadcast_in_dim(t, [3, 4], [0, 1]), [torch.ones(4)])


def test_broadcast_in_dim_with_out_of_range_dim_is_a_definition_error():
    with pytest.raises(nvfuse.DefinitionError, match="out of range"):
        run_fusion(lambda fd, t: fd.ops.broadcast_in_dim(t, [3, 4], [2]), [torch.ones(4)])


def test_broadcast_in_dim_with_decreasing_dims_is_a_definition_error():
    with pytest.raises(nvfuse.DefinitionError, match="strictly increasing"):
        run_fusion(
            lambda fd, t: fd.ops.broadcast_in_dim(t, [3, 4, 5], [1, 0]),
            [torch.ones(4, 3)],
        )


def test_broadcast_in_dim_onto_a_different_fixed_size_is_a_definition_error():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[4], contiguity=True)
        with pytest.raises(nvfuse.DefinitionError, match="cannot become size 5"):
            fd.ops.broadcast_in_dim(t, [3, 5], [1])
        fd.add_output(t)


def test_broadcast_with_wrong_flag_count_is_a_definition_error():
    with pytest.raises(nvfuse.DefinitionError, match="one False entry per input axis"):
        run_fusion(lambda fd, t: fd.ops.broadcast(t, [True, False]), [torch.ones(2, 2)])


def test_symbolic_size_mismatch_is_reported_at_execute():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.Float)
        fd.add_output(fd.ops.add(a, b))
    with pytest.raises(
        nvfuse.InputError, match=r"input 0 axis 0 \(size 3\) and input 1 axis 0 \(size 4\)"
    ):
        fd.execute([torch.ones(3), torch.ones(4)])
