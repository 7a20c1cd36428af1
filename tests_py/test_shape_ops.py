"""reshape, permute, squeeze, slice, pad and cat against torch, alone and
mixed with pointwise ops, on the CPU reference path and (marked) the GPU."""

import pytest
import torch

from nvfuse import DataType, FusionDefinition
from nvfuse.errors import DefinitionError, InputError
from fusion_helpers import DEVICES, assert_close, make_input, run_fusion


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64])
@pytest.mark.parametrize("new_shape", [[6, 4], [-1], [2, -1, 2], [1, 24, 1]])
def test_reshape_matches_torch(new_shape, dtype, device):
    x = make_input((2, 3, 4), dtype, device=device)
    (out,), _ = run_fusion(lambda fd, t: fd.ops.reshape(t, new_shape), [x])
    assert_close(out, x.reshape(new_shape))


def test_reshape_with_symbolic_sizes_from_a_vector():
    x = torch.randn(4, 6)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        rows = fd.define_scalar(dtype=DataType.Int)
        fd.add_output(fd.ops.reshape(t, fd.define_vector([rows, -1])))
    (out,) = fd.execute([x, 8])
    assert_close(out, x.reshape(8, 3))


def test_reshape_accepts_the_older_three_argument_form():
    x = torch.randn(2, 6)
    (out,), _ = run_fusion(lambda fd, t: fd.ops.reshape(t, [2, 6], [3, 4]), [x])
    assert_close(out, x.reshape(3, 4))


def test_reshape_with_the_wrong_element_count_is_a_definition_error():
    with pytest.raises(DefinitionError, match="has 6 elements but new_shape holds 8"):
        with FusionDefinition() as fd:
            t = fd.define_tensor([2, 3], contiguity=True)
            fd.ops.reshape(t, [2, 4])


def test_reshape_with_two_inferred_sizes_is_a_definition_error():
    with pytest.raises(DefinitionError, match="at most one size can be inferred"):
        with FusionDefinition() as fd:
            t = fd.define_tensor([-1, -1], contiguity=True)
            fd.ops.reshape(t, [-1, -1])


def test_symbolic_reshape_with_the_wrong_count_is_an_input_error():
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1, -1], contiguity=True)
        fd.add_output(fd.ops.reshape(t, [5, 5]))
    with pytest.raises(InputError):
        fd.execute([torch.randn(2, 3)])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dims", [[0, 1, 2], [2, 0, 1], [1, 2, 0], [-1, 0, 1]])
def test_permute_matches_torch(dims, device):
    x = make_input((2, 3, 4), torch.float32, device=device)
    (out,), _ = run_fusion(lambda fd, t: fd.ops.permute(t, dims), [x])
    assert_close(out, x.permute(dims))


def test_permute_that_repeats_an_axis_is_a_definition_error():
    with pytest.raises(DefinitionError, match="each axis exactly once"):
        with FusionDefinition() as fd:
            fd.ops.permute(fd.define_tensor([-1, -1], contiguity=True), [0, 0])


@pytest.mark.parametrize("device", DEVICES)
def test_squeeze_matches_torch(device):
    x = make_input((1, 3, 1, 4), torch.float32, device=device)
    (out,), _ = run_fusion(lambda fd, t: fd.ops.squeeze(t, [0, 2]), [x])
    assert_close(out, x.squeeze((0, 2)))


@pytest.mark.parametrize("device", DEVICES)
def test_squeeze_of_an_inferred_axis_after_a_reshape(device):
    # The squeeze requires the inferred size to be 1; that requirement is
    # the squeeze's, not a second element count of the reshape.
    x = make_input((5,), torch.float32, device=device)
    (out, squeezed), _ = run_fusion(
        lambda fd, t: (r := fd.ops.reshape(t, [5, -1]), fd.ops.squeeze(r, [1])), [x]
    )
    assert_close(out, x.reshape(5, -1))
    assert_close(squeezed, x)


def test_squeezing_an_inferred_axis_that_is_not_one_names_the_squeeze():
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1], contiguity=True)
        fd.add_output(fd.ops.squeeze(fd.ops.reshape(t, [5, -1]), [1]))
    with pytest.raises(InputError, match="squeeze"):
        fd.execute([torch.randn(10)])


def test_squeeze_of_a_sized_axis_is_a_definition_error():
    with pytest.raises(DefinitionError, match="only size-1 axes can be squeezed"):
        with FusionDefinition() as fd:
            fd.ops.squeeze(fd.define_tensor([2, 3], contiguity=True), [0])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "start, end, step",
    [
        ([0, 0], [3, 5], [1, 1]),
        ([1, 2], [3, 5], [1, 2]),
        ([-2, 1], [10, -1], [1, 3]),
        ([2, 4], [1, 2], [1, 1]),
        ([0, -100], [2, 100], [2, 1]),
    ],
)
def test_slice_matches_python_slicing(start, end, step, device):
    x = make_input((4, 7), torch.float32, device=device)
    (out,), _ = run_fusion(lambda fd, t: fd.ops.slice(t, start, end, step), [x])
    assert_close(out, x[start[0] : end[0] : step[0], start[1] : end[1] : step[1]])


def test_slice_with_symbolic_bounds():
    x = torch.randn(5, 8)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        begin = fd.define_scalar(dtype=DataType.Int)
        fd.add_output(fd.ops.slice(t, [0, begin], [5, 8]))
    (out,) = fd.execute([x, -3])
    assert_close(out, x[:, -3:])


def test_slice_with_a_zero_step_is_a_definition_error():
    with pytest.raises(DefinitionError, match="must be a positive constant"):
        with FusionDefinition() as fd:
            t = fd.define_tensor([-1], contiguity=True)
            fd.ops.slice(t, [0], [1], [0])


def test_slice_needs_one_bound_per_axis():
    with pytest.raises(DefinitionError, match="one entry per axis"):
        with FusionDefinition() as fd:
            fd.ops.slice(fd.define_tensor([-1, -1], contiguity=True), [0], [1])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("widths", [[1, 2], [0, 0, 2, 1], [-1, 1], [3, 0, 0, 0]])
@pytest.mark.parametrize("value", [None, 2.5])
def test_pad_matches_torch(widths, value, device):
    x = make_input((3, 5), torch.float32, device=device)
    (out,), _ = run_fusion(lambda fd, t: fd.ops.pad(t, widths, value), [x])
    expected = torch.nn.functional.pad(x, widths, value=0.0 if value is None else value)
    assert_close(out, expected)


def test_pad_with_an_odd_width_list_is_a_definition_error():
    with pytest.raises(DefinitionError, match="before, after"):
        with FusionDefinition() as fd:
            fd.ops.pad(fd.define_tensor([-1], contiguity=True), [1])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat_matches_torch(dim, device):
    a = make_input((2, 3), torch.float32, device=device)
    b = make_input((2, 3), torch.float32, device=device)
    c = make_input((2, 3), torch.float32, device=device)
    (out,), _ = run_fusion(lambda fd, x, y, z: fd.ops.cat([x, y, z], dim), [a, b, c])
    assert_close(out, torch.cat([a, b, c], dim))


@pytest.mark.parametrize("device", DEVICES)
def test_cat_of_different_dtypes_promotes_as_torch(device):
    a = make_input((2, 3), torch.int32, device=device)
    b = make_input((1, 3), torch.float16, device=device)
    c = make_input((2, 3), torch.bool, device=device)
    (out,), _ = run_fusion(lambda fd, x, y, z: fd.ops.cat([x, y, z], 0), [a, b, c])
    assert_close(out, torch.cat([a, b, c], 0))


def test_cat_of_mismatched_symbolic_sizes_is_an_input_error():
    with FusionDefinition() as fd:
        a = fd.define_tensor([-1, -1], contiguity=True)
        b = fd.define_tensor([-1, -1], contiguity=True)
        fd.add_output(fd.ops.cat([a, b], 0))
    with pytest.raises(InputError):
        fd.execute([torch.randn(2, 3), torch.randn(2, 4)])
    # The failed call leaves the fusion usable.
    (out,) = fd.execute([torch.ones(1, 2), torch.zeros(2, 2)])
    assert out.shape == (3, 2)


@pytest.mark.parametrize("device", DEVICES)
def test_rope_style_rotation_matches_torch(device):
    """Llama-style rotate_half: slices, neg, cat, then pointwise math."""
    x = make_input((2, 4, 8, 16), torch.float32, device=device)
    cos = make_input((8, 16), torch.float32, device=device)
    sin = make_input((8, 16), torch.float32, device=device)

    def build(fd, t, c, s):
        half1 = fd.ops.slice(t, [0, 0, 0, 0], [2, 4, 8, 8])
        half2 = fd.ops.slice(t, [0, 0, 0, 8], [2, 4, 8, 16])
        rotated = fd.ops.cat([fd.ops.neg(half2), half1], -1)
        return t * c + rotated * s

    (out,), _ = run_fusion(build, [x, cos, sin])
    rotated = torch.cat([-x[..., 8:], x[..., :8]], -1)
    assert_close(out, x * cos + rotated * sin)


def test_shape_ops_print_as_a_runnable_repro():
    with FusionDefinition() as fd:
        t = fd.define_tensor([-1, -1], contiguity=True)
        u = fd.ops.permute(fd.ops.reshape(t, [-1, 2]), [1, 0])
        fd.add_output(fd.ops.pad(fd.ops.slice(u, [0, 1], [2, 3]), [1, 1], 0.5))
    text = str(fd)
    assert "fd.ops.reshape(T0, new_shape=[-1, 2])" in text
    assert "fd.ops.permute(T1, dims=[1, 0])" in text
    namespace = {}
    exec(text, namespace)
    x = torch.randn(3, 4)
    (expected,) = fd.execute([x])
    (again,) = namespace["fd"].execute([x])
    assert_close(again, expected)


def test_cat_of_constant_shapes_checks_sizes_by_value():
    a, b = torch.randn(4, 3), torch.randn(4, 2)
    with FusionDefinition() as fd:
        x = fd.define_tensor([4, 3], contiguity=True)
        y = fd.define_tensor([4, 2], contiguity=True)
        fd.add_output(fd.ops.cat([x, y], 1))
    (out,) = fd.execute([a, b])
    assert_close(out, torch.cat([a, b], 1))
    with pytest.raises(DefinitionError, match="differ in size at axis 0"):
        with FusionDefinition() as fd:
            x = fd.define_tensor([4, 3], contiguity=True)
            y = fd.define_tensor([5, 3], contiguity=True)
            fd.ops.cat([x, y], 1)
