"""Elementwise maximum, minimum and relu of bf16 or fp16 tensors run in their
own type (device_runtime.cuh: max.NaN.bf16 and kin, relu on the bits): the
result is exact there, so no widening to float and rounding back. Without
a GPU the kernel text is checked and compiled by NVRTC for sm_90 and for
sm_75's float fallback; on a GPU the results equal torch's bit for bit,
NaNs, infinities and signed zeros included."""

import pytest
import torch

from nvfuse import DataType, FusionDefinition
from fusion_helpers import compiles_cleanly

HALF_TYPES = {torch.bfloat16: DataType.BFloat16, torch.float16: DataType.Half}
TYPE_NAMES = {torch.bfloat16: "nvfuse::BFloat16", torch.float16: "nvfuse::Half"}


def _elementwise(dtype, op):
    """op ("maximum", "minimum" or "relu") of 2-D inputs of torch dtype `dtype`."""
    with FusionDefinition() as fd:
        a = fd.define_tensor([-1, -1], contiguity=True, dtype=HALF_TYPES[dtype])
        if op == "relu":
            fd.add_output(fd.ops.relu(a))
        else:
            b = fd.define_tensor([-1, -1], contiguity=True, dtype=HALF_TYPES[dtype])
            fd.add_output(getattr(fd.ops, op)(a, b))
    return fd


SPECIALS = [float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 1.5, -1.5]


def _special_pairs(dtype, device):
    """Two random inputs whose row 0 holds every pair of special values
    (NaN, +-inf, both zeros, equal numbers), in both orders: a's column
    k is SPECIALS[k // 7], b's is SPECIALS[k % 7]."""
    n = len(SPECIALS)
    a = torch.randn(8, 1024, device=device)
    b = torch.randn(8, 1024, device=device)
    for k in range(n * n):
        a[0, k] = SPECIALS[k // n]
        b[0, k] = SPECIALS[k % n]
    return a.to(dtype), b.to(dtype)


OPS = ["maximum", "minimum", "relu"]


@pytest.mark.parametrize("dtype", list(HALF_TYPES), ids=str)
@pytest.mark.parametrize("op", OPS)
def test_half_extremes_take_no_float_round_trip(dtype, op):
    inputs = list(_special_pairs(dtype, "cpu"))[: 1 if op == "relu" else 2]
    code = _elementwise(dtype, op).cuda_code_for(inputs)
    line = next(text for text in code.splitlines() if f"nvfuse::{op}(" in text and "=" in text)
    assert "cast<float>" not in line and "cast<" + TYPE_NAMES[dtype] not in line, line
    for arch in (75, 90):
        compiles_cleanly(code, arch, entry="nvfuse_pointwise")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", list(HALF_TYPES), ids=str)
@pytest.mark.parametrize("op", OPS)
def test_half_extremes_match_torch_bit_for_bit(dtype, op):
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    a, b = _special_pairs(dtype, "cuda")
    if op == "relu":
        (got,) = _elementwise(dtype, op).execute([a])
        want = torch.relu(a)
    else:
        (got,) = _elementwise(dtype, op).execute([a, b])
        want = getattr(torch, op)(a, b)
    assert torch.equal(got.isnan(), want.isnan())
    # Bits, so that +0.0 and -0.0 differ; NaNs compared by position above.
    bits = got.view(torch.int16).masked_fill(got.isnan(), 0)
    want_bits = want.view(torch.int16).masked_fill(want.isnan(), 0)
    assert torch.equal(bits, want_bits)
