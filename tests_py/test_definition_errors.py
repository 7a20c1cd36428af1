"""Mistakes in a definition raise typed errors where they are written."""

import pytest
import torch

import nvfuse
from nvfuse import DataType, FusionDefinition


def test_tensor_from_another_definition():
    with FusionDefinition() as other:
        foreign = other.define_tensor(shape=[-1], contiguity=True)
        other.add_output(foreign)
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], contiguity=True)
        with pytest.raises(
            nvfuse.DefinitionTypeError, match="T0 belongs to another FusionDefinition"
        ):
            fd.ops.add(t, foreign)
        fd.add_output(t)


def test_output_that_is_not_a_value_of_the_definition():
    with FusionDefinition() as fd:
        fd.define_tensor(shape=[-1], contiguity=True)
        with pytest.raises(
            nvfuse.DefinitionTypeError, match="add_output: the output must be a tensor"
        ):
            fd.add_output(torch.ones(2))


def test_scalar_as_output():
    with FusionDefinition() as fd:
        s = fd.define_scalar(1.0)
        with pytest.raises(nvfuse.DefinitionTypeError, match="must be a tensor"):
            fd.add_output(s)


def test_bad_reduction_axis():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=True)
        with pytest.raises(
            nvfuse.DefinitionError,
            match=r"In fd.ops.sum\(T0, dims=\[2\].*axis 2 is out of range for a tensor of rank 2",
        ):
            fd.ops.sum(t, [2])
        fd.add_output(t)


def test_broadcast_dims_that_do_not_match_the_input_rank():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=True)
        with pytest.raises(
            nvfuse.DefinitionError, match="broadcast_dims has 1 entries but the input has rank 2"
        ):
            fd.ops.broadcast_in_dim(t, [2, 3, 4], [0])
        fd.add_output(t)


def test_fixed_sizes_that_cannot_combine():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[3], contiguity=True)
        b = fd.define_tensor(shape=[4], contiguity=True)
        with pytest.raises(nvfuse.DefinitionError, match="operands have sizes 3 and 4 at axis 0"):
            fd.ops.add(a, b)
        fd.add_output(a)


def test_op_that_rejects_the_dtype():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.Float)
        with pytest.raises(
            nvfuse.DefinitionTypeError, match="bitwise_and does not accept operands of type Float"
        ):
            fd.ops.bitwise_and(t, t)
        fd.add_output(t)


def test_wrong_number_of_operands():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], contiguity=True)
        with pytest.raises(
            nvfuse.DefinitionTypeError, match=r"fd.ops.add\(arg1, arg2\) is missing `arg2`"
        ):
            fd.ops.add(t)
        fd.add_output(t)


def test_contiguity_of_the_wrong_length():
    with FusionDefinition() as fd:
        with pytest.raises(
            nvfuse.DefinitionError, match="contiguity has 1 entries but shape has rank 2"
        ):
            fd.define_tensor(shape=[-1, -1], contiguity=[True])


def test_contiguity_on_a_broadcast_axis():
    with FusionDefinition() as fd:
        with pytest.raises(nvfuse.DefinitionError, match="axis 0 has size 1 .* must be None"):
            fd.define_tensor(shape=[1, -1], contiguity=[True, True])


def test_stride_order_that_is_not_a_permutation():
    with FusionDefinition() as fd:
        with pytest.raises(nvfuse.DefinitionError, match="stride_order"):
            fd.define_tensor(shape=[-1, -1], contiguity=True, stride_order=[0, 0])


def test_is_cpu_on_a_tensor_with_dimensions():
    with FusionDefinition() as fd:
        with pytest.raises(nvfuse.DefinitionError, match="is_cpu=True is only for 0-d tensors"):
            fd.define_tensor(shape=[-1], contiguity=True, is_cpu=True)


def test_alias_input_that_is_not_an_input():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], contiguity=True)
        u = fd.ops.neg(t)
        with pytest.raises(nvfuse.DefinitionError, match="must be a fusion input"):
            fd.add_output(fd.ops.exp(t), alias_input=u)
        fd.add_output(u)


def test_output_stride_order_of_the_wrong_length():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=True)
        with pytest.raises(
            nvfuse.DefinitionError, match="stride_order has 3 entries but the output has rank 2"
        ):
            fd.add_output(fd.ops.neg(t), stride_order=[2, 1, 0])
        fd.add_output(t)


def test_symbolic_scalar_without_dtype_defaults_to_double():
    with FusionDefinition() as fd:
        s = fd.define_scalar()
        t = fd.define_tensor(shape=[-1], contiguity=True)
        fd.add_output(t * s)
    assert s.dtype == DataType.Double


def test_float_value_with_integer_dtype():
    with FusionDefinition() as fd:
        with pytest.raises(
            nvfuse.DefinitionTypeError, match="float value 2.5 cannot have dtype Int"
        ):
            fd.define_scalar(2.5, dtype=DataType.Int)


def test_ops_after_the_definition_is_finished():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], contiguity=True)
        fd.add_output(t)
    with pytest.raises(nvfuse.DefinitionError, match="after the definition was finished"):
        fd.ops.neg(t)


def test_reentering_a_finished_definition():
    with FusionDefinition() as fd:
        fd.add_output(fd.define_tensor(shape=[-1], contiguity=True))
    with pytest.raises(nvfuse.DefinitionError, match="already defined"):
        with fd:
            pass


def test_execute_inside_the_with_block():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], contiguity=True)
        fd.add_output(t)
        with pytest.raises(nvfuse.DefinitionError, match="inside the `with` block"):
            fd.execute([torch.ones(1)])


def test_execute_without_any_definition():
    with pytest.raises(nvfuse.DefinitionError, match="has no definition"):
        FusionDefinition().execute([])


def test_unknown_fusion_id():
    with pytest.raises(nvfuse.DefinitionError, match="no cached fusion has id"):
        FusionDefinition(10**9)


def test_torch_tensor_as_operand():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], contiguity=True)
        with pytest.raises(nvfuse.DefinitionTypeError, match="got a torch.Tensor"):
            fd.ops.add(t, torch.ones(1))
        fd.add_output(t)


def test_a_failed_definition_is_dropped_and_the_next_one_works():
    before = nvfuse.FusionCache.get().num_fusions()
    with pytest.raises(nvfuse.DefinitionError):
        with FusionDefinition() as fd:
            t = fd.define_tensor(shape=[-1], contiguity=True)
            fd.ops.sum(t, [5])
    assert nvfuse.FusionCache.get().num_fusions() == before
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], contiguity=True)
        fd.add_output(fd.ops.sum(t, [0]))
    torch.testing.assert_close(fd.execute([torch.ones(4)])[0], torch.tensor(4.0))


def test_definition_errors_are_value_errors():
    with FusionDefinition() as fd:
        with pytest.raises(ValueError):
            fd.define_tensor(shape=[-1, -1], contiguity=[True])
