"""Each kind of bad execute() input raises a typed error that names the input,
what was expected and what was given; a bad call leaves the fusion usable."""

import pytest
import torch

import nvfuse
from nvfuse import DataType, FusionDefinition


def _pointwise(**define):
    with FusionDefinition() as fd:
        t = fd.define_tensor(**define)
        fd.add_output(fd.ops.neg(t))
    return fd


@pytest.fixture
def matrix_fd():
    return _pointwise(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)


def test_wrong_number_of_inputs(matrix_fd):
    with pytest.raises(nvfuse.InputError, match=r"takes 1 inputs, but 2 were given"):
        matrix_fd.execute([torch.ones(2, 2), torch.ones(2, 2)])


def test_wrong_dtype(matrix_fd):
    with pytest.raises(
        nvfuse.InputTypeError, match=r"input 0: expected a Float tensor.*got a Double tensor"
    ):
        matrix_fd.execute([torch.ones(2, 2, dtype=torch.float64)])


def test_wrong_dtype_is_also_a_type_error(matrix_fd):
    with pytest.raises(TypeError):
        matrix_fd.execute([torch.ones(2, 2, dtype=torch.int64)])


def test_wrong_rank(matrix_fd):
    with pytest.raises(
        nvfuse.InputError, match=r"input 0: expected .*\(rank 2\), got .*\(rank 3\)"
    ):
        matrix_fd.execute([torch.ones(2, 2, 2)])


def test_size_contradicts_a_constant_size():
    fd = _pointwise(shape=[3, -1], contiguity=True, dtype=DataType.Float)
    with pytest.raises(
        nvfuse.InputError, match="input 0 axis 0 has size 4 but the definition fixes it to 3"
    ):
        fd.execute([torch.ones(4, 2)])


def test_size_contradicts_a_broadcast_axis():
    fd = _pointwise(shape=[1, -1], contiguity=[None, True], dtype=DataType.Float)
    with pytest.raises(nvfuse.InputError, match="input 0 axis 0 has size 5.*broadcast axis"):
        fd.execute([torch.ones(5, 2)])


def test_contiguity_violation(matrix_fd):
    with pytest.raises(nvfuse.InputError, match="input 0 axis 1 has stride 2.*contiguous"):
        matrix_fd.execute([torch.ones(4, 6)[:, ::2]])


def test_stride_order_violation():
    fd = _pointwise(shape=[-1, -1], contiguity=[False, False], dtype=DataType.Float)
    with pytest.raises(nvfuse.InputError, match="stride order places inside it"):
        fd.execute([torch.ones(3, 4).t()])


def test_non_zero_dim_tensor_where_is_cpu_was_declared():
    fd = _pointwise(shape=[], contiguity=[], dtype=DataType.Float, is_cpu=True)
    with pytest.raises(nvfuse.InputError, match=r"input 0: expected .*is_cpu=True \(rank 0\)"):
        fd.execute([torch.ones(3)])


@pytest.mark.gpu
def test_mixed_devices():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1], contiguity=True)
        b = fd.define_tensor(shape=[-1], contiguity=True)
        fd.add_output(a + b)
    with pytest.raises(nvfuse.InputError, match="input 1 is on cuda:0 but input 0 is on cpu"):
        fd.execute([torch.ones(3), torch.ones(3, device="cuda")])


def test_expanded_broadcast_axis_with_a_real_stride():
    fd = _pointwise(shape=[-1, -1], contiguity=[None, True], dtype=DataType.Float)
    with pytest.raises(nvfuse.InputError, match="expanded broadcast.*stride must be 0"):
        fd.execute([torch.ones(3, 4)])


def test_not_a_tensor(matrix_fd):
    with pytest.raises(
        nvfuse.InputTypeError,
        match="input 0: expected a torch.Tensor or a Python number, got an object of type str",
    ):
        matrix_fd.execute(["x"])


def test_number_where_a_tensor_was_defined(matrix_fd):
    with pytest.raises(
        nvfuse.InputTypeError, match="input 0: expected a Float tensor.*got the Python scalar 2.0"
    ):
        matrix_fd.execute([2.0])


def test_wrong_python_type_for_a_symbolic_scalar():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], contiguity=True)
        s = fd.define_scalar(dtype=DataType.Int)
        fd.add_output(t * s)
    with pytest.raises(
        nvfuse.InputTypeError, match="input 1: expected an Int scalar, got the Python scalar 2.5"
    ):
        fd.execute([torch.ones(2), 2.5])


def test_tensor_where_a_symbolic_scalar_was_defined():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], contiguity=True)
        s = fd.define_scalar(dtype=DataType.Double)
        fd.add_output(t * s)
    with pytest.raises(nvfuse.InputTypeError, match="input 1: expected a Double scalar"):
        fd.execute([torch.ones(2), torch.ones(2)])


def test_in_place_target_of_another_shape():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], contiguity=True)
        b = fd.define_tensor(shape=[1, -1], contiguity=[None, True])
        fd.add_output(fd.ops.add(a, b), alias_input=b)
    with pytest.raises(nvfuse.InputError, match="updated in place"):
        fd.execute([torch.ones(3, 2), torch.ones(1, 2)])


def test_a_failing_computation_names_the_op():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.Int)
        fd.add_output(fd.ops.div(a, a))
    with pytest.raises(
        nvfuse.InputError, match=r"evaluating `.*div\(T0, T0\)` failed.*ZeroDivisionError"
    ):
        fd.execute([torch.tensor([2, 0])])


def test_a_bad_input_does_not_poison_later_calls(matrix_fd):
    with pytest.raises(nvfuse.InputTypeError):
        matrix_fd.execute([torch.ones(2, 2, dtype=torch.float64)])
    with pytest.raises(nvfuse.InputError):
        matrix_fd.execute([torch.ones(4, 6)[:, ::2]])
    x = torch.randn(3, 3)
    torch.testing.assert_close(matrix_fd.execute([x])[0], -x)


def test_input_errors_are_nvfuse_errors(matrix_fd):
    with pytest.raises(nvfuse.NvfuseError):
        matrix_fd.execute([])


@pytest.mark.parametrize("size, shape", [(0, r"\[0, -1\]"), (5, r"\[5, -1\]"), (-3, r"\[-3, -1\]")])
def test_a_symbolic_reshape_size_that_does_not_fit_is_named_as_torch_names_it(size, shape):
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=True)
        rows = fd.define_scalar(dtype=DataType.Int)
        fd.add_output(fd.ops.reshape(t, [rows, -1]))
    with pytest.raises(
        nvfuse.InputError,
        match=rf"reshape: the shape {shape} is invalid for an input of 24 elements",
    ):
        fd.execute([torch.randn(4, 6), size])
    (out,) = fd.execute([torch.arange(24.0).reshape(4, 6), 3])
    assert torch.equal(out, torch.arange(24.0).reshape(3, 8))


# Each segment reuses its last binding while a call's arguments look the
# same (runtime/binding_memo.h): a call that differs in anything binding
# checks must be checked again, not taken for the last good one.


def _two_inputs_with_equal_sizes():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        b = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)
        s = fd.define_scalar(dtype=DataType.Float)
        fd.add_output(fd.ops.mul(fd.ops.add(a, b), s))
    return fd


@pytest.mark.parametrize(
    "bad, error",
    [
        ((torch.ones(2, 3, dtype=torch.float64), torch.ones(2, 3), 2.0), nvfuse.InputTypeError),
        ((torch.ones(3, 2).t(), torch.ones(2, 3), 2.0), nvfuse.InputError),
        ((torch.ones(2, 3), torch.ones(2, 4), 2.0), nvfuse.InputError),
        ((torch.ones(2, 3), torch.ones(2, 3), True), nvfuse.InputTypeError),
    ],
    ids=["dtype", "strides", "sizes", "scalar kind"],
)
def test_a_bad_call_after_a_good_one_with_the_same_shapes_is_still_checked(bad, error):
    fd = _two_inputs_with_equal_sizes()
    good = [torch.ones(2, 3), torch.full((2, 3), 2.0), 3.0]
    (out,) = fd.execute(good)
    torch.testing.assert_close(out, torch.full((2, 3), 9.0))
    with pytest.raises(error):
        fd.execute(list(bad))
    (out,) = fd.execute([torch.ones(2, 3), torch.ones(2, 3), 0.5])
    torch.testing.assert_close(out, torch.ones(2, 3))
