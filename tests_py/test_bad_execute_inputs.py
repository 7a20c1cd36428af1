"""Definition arguments and execute() scalars at the edges: typed errors,
never pybind11's or ATen's untyped ones, and torch's overflow behaviour.
(One test per class of bad execute() input: test_bad_input_suite.py.)"""

import pytest
import torch

from nvfuse import DataType, FusionDefinition
from nvfuse.errors import DefinitionError, DefinitionTypeError, InputTypeError


def _add_fusion():
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1], contiguity=True)
        s = fd.define_scalar(dtype=DataType.Int)
        fd.add_output(fd.ops.add(t, s))
    return fd


def test_an_int_constant_outside_int64_is_a_definition_error():
    with pytest.raises(DefinitionError, match="outside int64"):
        with FusionDefinition() as fd:
            fd.add_output(fd.ops.add(fd.define_tensor([-1], contiguity=True), 2**64))


@pytest.mark.parametrize(
    "build",
    [
        lambda fd, t: fd.ops.cat(t, 0),
        lambda fd, t: fd.ops.broadcast(t, None),
        lambda fd, t: fd.ops.permute(t, None),
        lambda fd, t: fd.ops.squeeze(t, None),
    ],
)
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
