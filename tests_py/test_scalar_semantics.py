"""Python numbers in ops as torch treats them: where() of two numbers
gives the default dtype, a number beside a half-precision tensor is rounded
to that dtype first, and pow(t, +-0.5) is sqrt / rsqrt with their special
values. CPU reference path and (marked) generated kernels."""

import pytest
import torch

from fusion_helpers import DEVICES, run_fusion


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "a, b, dtype", [(1.5, -2.0, torch.float32), (1, 0, torch.int64), (True, False, torch.bool)]
)
def test_where_of_two_numbers_has_torchs_dtype(a, b, dtype, device):
    c = torch.tensor([True, False, True], device=device)
    (out,), _ = run_fusion(lambda fd, cond: fd.ops.where(cond, a, b), [c])
    want = torch.where(c, a, b)
    assert out.dtype == want.dtype == dtype
    assert torch.equal(out, want)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_numbers_round_to_the_tensors_half_type_where_torchs_cuda_kernels_do(dtype, device):
    """Comparisons and remainders read the number in the tensor's dtype;
    add, sub, mul and div read it unrounded in Float (torch's CUDA kernels;
    its CPU add and sub round, nvfuse follows CUDA)."""
    x = torch.tensor([0.1, 100.7, 2.5, -0.3], dtype=dtype, device=device)
    (eq, rem, added, scaled), _ = run_fusion(
        lambda fd, t: (
            fd.ops.eq(t, 0.1),
            fd.ops.remainder(t, 0.3),
            fd.ops.add(t, 0.1),
            fd.ops.mul(t, 257),
        ),
        [x],
    )
    assert torch.equal(eq, x == 0.1)
    assert eq[0].item()
    assert torch.equal(rem, torch.remainder(x, 0.3))
    assert torch.equal(added, (x.float() + 0.1).to(dtype))
    assert torch.equal(scaled, x * 257)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("exponent", [0.5, -0.5])
def test_square_root_powers_have_torchs_special_values(exponent, dtype, device):
    x = torch.tensor(
        [-float("inf"), -0.0, 0.0, float("inf"), 4.0, -4.0, float("nan")],
        dtype=dtype,
        device=device,
    )
    (out,), _ = run_fusion(lambda fd, t: fd.ops.pow(t, exponent), [x])
    want = torch.pow(x, exponent)
    torch.testing.assert_close(out, want, equal_nan=True)
    numbers = ~want.isnan()  # a NaN's sign bit means nothing
    assert torch.equal(torch.signbit(out[numbers]), torch.signbit(want[numbers]))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_mean_rounds_once(dtype, device):
    """torch sums and divides in Float and rounds the mean once; rounding
    the sum first is 1 ulp off in about a third of the rows."""
    x = torch.randn(512, 333, device=device).to(dtype)
    (out,), _ = run_fusion(lambda fd, t: fd.ops.mean(t, dims=[1]), [x])
    assert out.dtype == dtype
    want = x.mean(1)
    assert (out != want).sum().item() <= 2
