"""Cheaper math in the reduction kernels where the row fixes the range:
division by a per-row value as a product with its reciprocal (falling back
to division for divisors whose reciprocal is not a normal number, unless the
divisor is a softmax's sum, which holds exp(0) = 1), and the
hardware exp for values that are never positive (softmax's y - max(y),
log-softmax's y - max(y) - log-sum). Without a GPU the kernel text is
checked and compiled by NVRTC; on a GPU the results against torch,
including the divisors where the reciprocal would be wrong."""

import math

import pytest
import torch

from nvfuse import DataType, FusionDefinition
from fusion_helpers import DEVICES, compiles_cleanly, kernel_of
from workloads.norm_definitions import define_case


def test_softmax_divides_by_the_row_reciprocal_and_takes_the_hardware_exp():
    code = define_case("softmax_fwd", torch.bfloat16).cuda_code_for(
        [torch.randn(64, 8192, dtype=torch.bfloat16)]
    )
    kernel = kernel_of(code)
    # The sum holds exp(0) = 1: no divisor check (RowReciprocal).
    assert kernel.count("nvfuse::RowReciprocal<float> divisor_") == 1
    assert "RowDivisor<" not in kernel
    assert ".divide(" in kernel and " / " not in kernel.split("// phase 2")[1]
    # Computed once, in phase 1, and carried to phase 2 (test_carried_exps.py).
    assert kernel.count("nvfuse::exp_nonpositive(") == 1 and "expf(" not in kernel
    compiles_cleanly(code)


def test_division_by_other_row_sums_checks_the_divisor():
    """A plain sum may be 0, subnormal or huge: RowDivisor keeps IEEE
    division for those rows; so does a sum of exps of another row's max."""
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True, dtype=DataType.Float)
        z = fd.define_tensor([-1, -1], contiguity=True, dtype=DataType.Float)
        e = fd.ops.exp(z - fd.ops.broadcast(fd.ops.max(x, [1]), [False, True]))
        fd.add_output(x / fd.ops.broadcast(fd.ops.sum(x, [1]), [False, True]))
        fd.add_output(e / fd.ops.broadcast(fd.ops.sum(e, [1]), [False, True]))
    code = fd.cuda_code_for([torch.randn(16, 1024), torch.randn(16, 1024)])
    kernel = kernel_of(code)
    assert kernel.count("nvfuse::RowDivisor<float> divisor_") == 2
    assert "RowReciprocal<" not in kernel
    compiles_cleanly(code)


def test_cross_entropy_backward_exps_are_never_positive():
    """probs = exp(y - max - log-sum): the log-sum is never negative."""
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True, dtype=DataType.Float)
        shifted = x - fd.ops.broadcast(fd.ops.max(x, [1]), [False, True])
        log_sum = fd.ops.log(fd.ops.sum(fd.ops.exp(shifted), [1]))
        fd.add_output(fd.ops.exp(shifted - fd.ops.broadcast(log_sum, [False, True])))
    kernel = kernel_of(fd.cuda_code_for([torch.randn(16, 1024)]))
    assert kernel.count("nvfuse::exp_nonpositive(") == 2 and "expf(" not in kernel


def test_exps_of_unbounded_values_keep_expf():
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True, dtype=DataType.Float)
        z = fd.define_tensor([-1, -1], contiguity=True, dtype=DataType.Float)
        shifted = z - fd.ops.broadcast(fd.ops.max(x, [1]), [False, True])  # another row's max
        fd.add_output(fd.ops.sum(fd.ops.exp(shifted), [1]))
        fd.add_output(fd.ops.sum(fd.ops.exp(x), [1]))
    kernel = kernel_of(fd.cuda_code_for([torch.randn(16, 1024), torch.randn(16, 1024)]))
    assert "exp_nonpositive(t" not in kernel and kernel.count("expf(") == 2


def _scale_rows(x):
    """Rows whose sums are subnormal, huge, zero, infinite, NaN and normal."""
    scales = [1e-40, 1e38 / x.shape[1], 0.0, math.inf, math.nan, 1.0]
    return x.abs() * torch.tensor(scales[: x.shape[0]], device=x.device)[:, None]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_division_by_row_sums_matches_torch_for_every_divisor(device, dtype):
    x = _scale_rows(torch.rand(6, 300, device=device, dtype=dtype) + 0.5)
    nv = {torch.float32: DataType.Float, torch.float64: DataType.Double}[dtype]
    with FusionDefinition() as fd:
        tx = fd.define_tensor([-1, -1], contiguity=True, dtype=nv)
        fd.add_output(tx / fd.ops.broadcast(fd.ops.sum(tx, [1]), [False, True]))
    (out,) = fd.execute([x])
    expected = x / x.sum(1, keepdim=True)
    torch.testing.assert_close(out, expected, equal_nan=True)


@pytest.mark.gpu
@pytest.mark.parametrize("width", [7, 1600, 8192, 65536])
def test_gpu_softmax_and_log_softmax_with_the_hardware_exp(width):
    x = torch.randn(33, width, device="cuda") * 8
    x[0] = -math.inf
    x[1, ::3] = -math.inf
    x[2, 0] = 100.0  # every other term underflows
    for case, reference in (("softmax_fwd", torch.softmax), ("log_softmax_fwd", torch.log_softmax)):
        (out,) = define_case(case, torch.float32).execute([x])
        torch.testing.assert_close(out, reference(x, -1), equal_nan=True)
