"""Integer div, fmod and remainder where C leaves them undefined and the
CPU's division traps (eager torch dies of SIGFPE on INT64_MIN // -1): the
quotient wraps to the value itself, the remainder is 0, on the CPU
reference path, in generated kernels and in scalar arithmetic alike."""

import pytest
import torch

from nvfuse import DataType, FusionDefinition
from fusion_helpers import DEVICES, run_fusion


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
def test_most_negative_value_divided_by_minus_one_wraps(dtype, device):
    low = torch.iinfo(dtype).min
    a = torch.tensor([low, low, 7, -7, low + 1], dtype=dtype, device=device)
    b = torch.tensor([-1, 1, -1, 2, -1], dtype=dtype, device=device)
    (quotient, rest, remainder), _ = run_fusion(
        lambda fd, x, y: (fd.ops.div(x, y), fd.ops.fmod(x, y), fd.ops.remainder(x, y)), [a, b]
    )
    assert quotient.tolist() == [low, low, -7, -3, -(low + 1)]
    assert rest.tolist() == [0, 0, 0, -1, 0]
    assert remainder.tolist() == [0, 0, 0, 1, 0]


def test_scalar_division_of_the_most_negative_value_wraps():
    low = -(2**63)
    with FusionDefinition() as fd:
        a = fd.define_scalar(dtype=DataType.Int)
        b = fd.define_scalar(dtype=DataType.Int)
        t = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.Int)
        fd.add_output(fd.ops.add(t, fd.ops.div(a, b)))
        fd.add_output(fd.ops.add(t, fd.ops.fmod(a, b)))
    quotient, rest = fd.execute([low, -1, torch.zeros(2, dtype=torch.int64)])
    assert quotient.tolist() == [low, low] and rest.tolist() == [0, 0]
