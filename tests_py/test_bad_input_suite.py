"""One test per class of bad execute() input: each is refused with a typed
NvfuseError subclass whose message names the input, and the next good call
on the same definition still gives torch's result.

The definition: input 0 a Float [-1, 4] tensor, input 1 a Float [-1, -1]
tensor, input 2 an Int scalar; output input0 * input2 + input1."""

import pytest
import torch

from nvfuse import DataType, FusionDefinition
from nvfuse.errors import InputError, InputTypeError, NvfuseError


def _fusion():
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape=[-1, 4], contiguity=True)
        b = fd.define_tensor(shape=[-1, -1], contiguity=True)
        s = fd.define_scalar(dtype=DataType.Int)
        fd.add_output(fd.ops.add(fd.ops.mul(a, s), b))
    return fd


def _good(device="cpu"):
    return [torch.randn(3, 4, device=device), torch.randn(3, 4, device=device), 2]


def _refused_then_works(replace, error, match, device="cpu"):
    """Executes good inputs with `replace` {position: value} applied (or
    `replace` itself when it is not a dict), expects `error` matching
    `match`, then a good call."""
    fd = _fusion()
    if isinstance(replace, dict):
        bad = _good(device)
        for position, value in replace.items():
            bad[position] = value
    else:
        bad = replace
    with pytest.raises(error, match=match) as raised:
        fd.execute(bad)
    assert isinstance(raised.value, NvfuseError)
    a, b, s = _good(device)
    (out,) = fd.execute([a, b, s])
    torch.testing.assert_close(out, a * s + b)


def test_count():
    _refused_then_works(_good()[:2], InputError, r"takes 3 inputs, but 2 were given")


@pytest.mark.parametrize("dtype", [torch.float64, torch.bool, torch.int64, torch.complex64])
def test_dtype(dtype):
    _refused_then_works(
        {1: torch.zeros(3, 4, dtype=dtype)}, InputTypeError, r"^input 1: expected a Float tensor"
    )


def test_dtype_nvfuse_lacks():
    _refused_then_works(
        {0: torch.zeros(3, 4, dtype=torch.uint8)},
        InputTypeError,
        r"^input 0: torch dtype Byte is not supported",
    )


def test_rank():
    _refused_then_works(
        {1: torch.randn(1, 3, 4)}, InputError, r"^input 1: expected .*\(rank 2\), got .*\(rank 3\)"
    )


def test_size_fixed_by_the_definition():
    _refused_then_works(
        {0: torch.randn(3, 5)},
        InputError,
        r"^input 0 axis 1 has size 5 but the definition fixes it to 4",
    )


def test_sizes_that_must_agree():
    _refused_then_works(
        {1: torch.randn(2, 4)},
        InputError,
        r"input 0 axis 0 \(size 3\) and input 1 axis 0 \(size 2\)",
    )


def test_layout():
    _refused_then_works(
        {1: torch.randn(4, 3).t()}, InputError, r"^input 1 axis 1 has stride 3.*contiguous"
    )


@pytest.mark.gpu
def test_device():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    _refused_then_works({1: torch.randn(3, 4)}, InputError, r"input 1", device="cuda")


@pytest.mark.parametrize(
    "value, position, match",
    [
        (
            "2",
            2,
            r"^input 2: expected a torch.Tensor or a Python number, got an object of type str",
        ),
        (None, 1, r"^input 1: .* got an object of type NoneType"),
        ([1.0, 2.0], 0, r"^input 0: .* got an object of type list"),
        (2.5, 2, r"^input 2: expected an Int scalar, got the Python scalar 2.5"),
        (torch.tensor([2, 3]), 2, r"^input 2: expected an Int scalar, got a Long tensor"),
        (1.5, 0, r"^input 0: expected a Float tensor .* got the Python scalar 1.5"),
    ],
)
def test_python_types(value, position, match):
    _refused_then_works({position: value}, InputTypeError, match)


@pytest.mark.parametrize(
    "inputs, match",
    [
        (None, r"list .* got NoneType"),
        (42, r"got int"),
        (torch.randn(3, 4), r"got a tensor; pass \[tensor\]"),
    ],
)
def test_not_a_list_of_inputs(inputs, match):
    _refused_then_works(inputs, InputTypeError, match)


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 2**70])
def test_overflowing_scalar(value):
    _refused_then_works({2: value}, InputError, r"^input 2 is the int .*outside int64")


def test_meta_tensor():
    _refused_then_works(
        {0: torch.randn(3, 4, device="meta")}, InputError, r"^input 0 is a meta tensor"
    )


def test_nested_tensor():
    nested = torch.nested.nested_tensor([torch.randn(2), torch.randn(3)], layout=torch.jagged)
    _refused_then_works({1: nested}, InputTypeError, r"^input 1 is a nested tensor")


def test_sparse_tensor():
    _refused_then_works(
        {1: torch.randn(3, 4).to_sparse()}, InputTypeError, r"^input 1 has layout torch.sparse_coo"
    )
