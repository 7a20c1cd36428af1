"""Shared helpers: run a small definition on torch inputs, make inputs, and
compare with torch at tolerances that fit the dtype."""

import re

import pytest
import torch

from nvfuse import FusionDefinition
from nvfuse.pytorch_utils import python_scalar_dtype

FLOAT_DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16]
ALL_DTYPES = FLOAT_DTYPES + [torch.int64, torch.int32, torch.bool]


def define_inputs(fd, inputs):
    """Tensors via from_pytorch; Python numbers as symbolic scalars."""
    handles = []
    for value in inputs:
        if isinstance(value, torch.Tensor):
            handles.append(fd.from_pytorch(value))
        else:
            handles.append(fd.define_scalar(dtype=python_scalar_dtype(value)))
    return handles


def run_fusion(build, inputs, device=None):
    """Defines inputs like `inputs`, adds build(fd, *handles) as outputs,
    executes, and returns (outputs, fd)."""
    with FusionDefinition() as fd:
        handles = define_inputs(fd, inputs)
        outs = build(fd, *handles)
        if not isinstance(outs, (tuple, list)):
            outs = [outs]
        for out in outs:
            fd.add_output(out)
    return fd.execute(inputs), fd


def make_input(shape, dtype, low=None, high=None, device="cpu"):
    """Fresh random values; never all zeros."""
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, device=device).bool()
    if not dtype.is_floating_point and not dtype.is_complex:
        low = -8 if low is None else int(low)
        high = 8 if high is None else int(high)
        return torch.randint(low, high, shape, dtype=dtype, device=device)
    low = -3.0 if low is None else low
    high = 3.0 if high is None else high
    t = torch.rand(shape, dtype=torch.float64, device=device) * (high - low) + low
    return t.to(dtype)


def assert_close(actual, expected):
    """Equal dtype and shape; values within the tolerance of the dtype."""
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if expected.dtype in (torch.bfloat16, torch.float16):
        torch.testing.assert_close(
            actual.float(), expected.float(), rtol=1.6e-2, atol=1e-2, equal_nan=True
        )
    else:
        torch.testing.assert_close(actual, expected, equal_nan=True)


# The CPU reference path, and the same test on a GPU where there is one.
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


def params_of(code):
    """The schedule's printed ReductionParams in a generated reduction kernel."""
    return re.search(r"// ReductionParams\((.*)\)", code).group(1)
