"""The last reduction of a row that one block holds and whose results lane
0 alone stores (a loss per row, a row sum) finishes in the first warp
(nvfuse::reduce_into_first_warp): the other warps leave after its barrier.
Without a GPU the kernel text is checked and compiled by NVRTC; on a GPU
cross-entropy and log-softmax against torch in float64, at large shifts and
with NaN and infinite rows."""

import math

import pytest
import torch

from fusion_helpers import compiles_cleanly, kernel_of
from workloads.norm_definitions import define_case

import workloads.loss_and_norm_definitions as loss_defs  # noqa: E402


def _cross_entropy_code(dtype, rows=64, width=8192):
    logits = torch.randn(rows, width).to(dtype)
    labels = torch.randint(0, width, (rows,))
    return loss_defs.cross_entropy_fwd_fd(dtype).cuda_code_for([logits, labels])


def test_a_loss_row_finishes_in_the_first_warp_but_a_cluster_row_does_not():
    kernel = kernel_of(_cross_entropy_code(torch.bfloat16))
    assert kernel.count("nvfuse::reduce_into_first_warp<kBlock>(") == 1
    # the max still reaches every warp: the exps need it
    assert kernel.count("nvfuse::row_reduce<kLanes, kBlock>(") == 1
    cluster = kernel_of(_cross_entropy_code(torch.bfloat16, rows=8, width=32000))
    assert "cluster=" in cluster and "reduce_into_first_warp" not in cluster
    compiles_cleanly(_cross_entropy_code(torch.bfloat16, rows=8, width=32000))


def _shifted_rows(rows, width, dtype, shift, device):
    """Rows of randn * 4 + shift, the first rows special: a NaN, a +inf, all
    -inf, and one at -shift."""
    x = torch.randn(rows, width, dtype=torch.float64, device=device) * 4 + shift
    x[0, width // 2] = math.nan
    x[1, 3] = math.inf
    x[2] = -math.inf
    x[3] -= 2 * shift
    return x.to(dtype)


SHIFTS = [0.0, 1000.0, -3.0e4, 5.0e7, 3.0e38]


@pytest.mark.gpu
@pytest.mark.parametrize("shift", SHIFTS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_gpu_log_softmax_of_shifted_rows_matches_torch(shift, dtype):
    x = _shifted_rows(33, 8192, dtype, shift, "cuda")
    (got,) = define_case("log_softmax_fwd", dtype).execute([x])
    want = torch.log_softmax(x.double(), -1)
    if dtype == torch.float32:
        torch.testing.assert_close(got.double(), want, rtol=2e-6, atol=2e-5, equal_nan=True)
    else:  # a bf16 output: within its rounding of the float64 result
        torch.testing.assert_close(got, want.to(dtype), equal_nan=True)


@pytest.mark.gpu
@pytest.mark.parametrize("shift", SHIFTS[:-1])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_gpu_cross_entropy_of_shifted_rows_matches_torch(shift, dtype):
    x = _shifted_rows(33, 8192, dtype, shift, "cuda")
    labels = torch.randint(0, 8192, (33,), device="cuda")
    labels[1] = 3  # the +inf logit
    (got,) = loss_defs.cross_entropy_fwd_fd(dtype).execute([x, labels])
    want = torch.nn.functional.cross_entropy(x.double(), labels, reduction="none")
    # The definition adds the row max back (log-sum + max - x[label]): its
    # float rounding at |max| is the bound, plus the exps' own error.
    row_max = x.double().nan_to_num(posinf=0, neginf=0).abs().amax(1)
    bound = row_max * 2.0**-23 + 2e-5
    error = (got.double() - want).abs()
    finite = want.isfinite()
    assert (got.isnan() == want.isnan()).all(), (got, want)
    assert (error[finite] <= bound[finite]).all(), (error[finite] - bound[finite]).max()
    assert (got[~finite & ~want.isnan()] == want[~finite & ~want.isnan()]).all()
