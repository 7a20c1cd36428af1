"""execute() inputs that cannot be bound get a typed NvfuseError naming
the input, never pybind11's or ATen's untyped errors, and the definition
keeps working after each."""

import pytest
import torch

from nvfuse import DataType, FusionDefinition
from nvfuse.errors import DefinitionError, DefinitionTypeError, InputError, InputTypeError


def _add_fusion():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], contiguity=True)
        s = fd.define_scalar(dtype=DataType.Int)
        fd.add_output(fd.ops.add(t, s))
    return fd


@pytest.mark.parametrize("inputs, error, match", [
    (None, InputTypeError, "list .* got NoneType"),
    (42, InputTypeError, "got int"),
    (torch.randn(3), InputTypeError, r"got a tensor; pass \[tensor\]"),
    ([torch.randn(3), 2**70], InputError, "input 1 is the int"),
    ([torch.randn(3, device="meta"), 1], InputError, "input 0 is a meta tensor"),
    ([torch.randn(3).to_sparse(), 1], InputTypeError, "input 0 has layout"),
])
def test_unbindable_inputs_are_typed_errors(inputs, error, match):
    fd = _add_fusion()
    with pytest.raises(error, match=match):
        fd.execute(inputs)
    x = torch.randn(3)
    (out,) = fd.execute([x, 2])
    torch.testing.assert_close(out, x + 2)


def test_a_nested_tensor_input_is_a_type_error():
    nested = torch.nested.nested_tensor([torch.randn(2), torch.randn(3)], layout=torch.jagged)
    with pytest.raises(InputTypeError, match="nested"):
        _add_fusion().execute([nested, 1])


def test_an_int_constant_outside_int64_is_a_definition_error():
    with pytest.raises(DefinitionError, match="outside int64"):
        with FusionDefinition() as fd:
            fd.add_output(fd.ops.add(fd.define_tensor([-1], contiguity=True), 2**64))


@pytest.mark.parametrize("build", [
    lambda fd, t: fd.ops.cat(t, 0),
    lambda fd, t: fd.ops.broadcast(t, None),
    lambda fd, t: fd.ops.permute(t, None),
    lambda fd, t: fd.ops.squeeze(t, None),
])
def test_non_iterable_arguments_are_definition_type_errors(build):
    with pytest.raises(DefinitionTypeError, match="must be a list"):
        with FusionDefinition() as fd:
            build(fd, fd.define_tensor([-1, 1], contiguity=True))


def test_a_huge_double_beside_a_float_tensor_overflows_to_inf_as_in_torch():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], contiguity=True)
        s = fd.define_scalar(dtype=DataType.Double)
        fd.add_output(fd.ops.mul(t, s))
    x = torch.ones(3)
    (out,) = fd.execute([x, 1e308])
    assert torch.equal(out, x * 1e308)


def test_a_tensor_of_a_dtype_nvfuse_lacks_names_its_input():
    with pytest.raises(InputTypeError, match="input 0: torch dtype Byte is not supported"):
        _add_fusion().execute([torch.ones(3, dtype=torch.uint8), 1])
