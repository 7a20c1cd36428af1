"""A row max or min over the lanes of a bf16 or fp16 input (cast to float
or not) runs on packed pairs (nvfuse::PackedExtreme: max.NaN.bf16x2 and its
kin) instead of a conversion and a float compare per lane. Without a GPU
the kernel text is checked and compiled by NVRTC, for sm_90 and for sm_75's
unpacked fallback; on a GPU the results equal torch's bit for bit, NaNs and
infinities included."""

import pytest
import torch

from nvfuse import DataType, FusionDefinition
from fusion_helpers import compiles_cleanly

import workloads.loss_and_norm_definitions as loss_defs  # noqa: E402

HALF_TYPES = {torch.bfloat16: DataType.BFloat16, torch.float16: DataType.Half}


def _extreme(dtype, op, cast=True, absolute=False):
    """op ("max" or "min") over dim 1 of a 2-D input of torch dtype `dtype`."""
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True, dtype=HALF_TYPES.get(dtype, DataType.Float))
        v = fd.ops.cast(x, DataType.Float) if cast else x
        if absolute:
            v = fd.ops.abs(v)
        fd.add_output(getattr(fd.ops, op)(v, [1]))
    return fd


def _phase0(code):
    start = code.index("// phase 0")
    end = code.find("// phase 1", start)
    return code[start:] if end < 0 else code[start:end]


@pytest.mark.parametrize(
    "dtype,type_name",
    [(torch.bfloat16, "nvfuse::BFloat16"), (torch.float16, "nvfuse::Half")],
    ids=str,
)
@pytest.mark.parametrize("op,is_max", [("max", "true"), ("min", "false")])
@pytest.mark.parametrize("cast", [True, False], ids=["cast", "uncast"])
def test_a_half_row_extreme_is_taken_on_packed_pairs(dtype, type_name, op, is_max, cast):
    code = _extreme(dtype, op, cast).cuda_code_for([torch.randn(64, 4096, dtype=dtype)])
    phase = _phase0(code)
    assert f"nvfuse::PackedExtreme<{is_max}, {type_name}> packed_" in phase
    assert ".add(in_t0[k]);" in phase
    # No float compare per lane: the packed result is folded in once.
    assert phase.count("Op<float>()(acc_") == 1
    for arch in (75, 90):
        compiles_cleanly(code, arch)


def test_cross_entropy_forward_takes_its_row_max_packed():
    fd = loss_defs.cross_entropy_fwd_fd(torch.bfloat16)
    inputs = [
        torch.randn(4096, loss_defs.WIDTH, dtype=torch.bfloat16),
        torch.randint(0, loss_defs.WIDTH, (4096,)),
    ]
    code = fd.cuda_code_for(inputs)
    assert "nvfuse::PackedExtreme<true, nvfuse::BFloat16>" in _phase0(code)
    compiles_cleanly(code, 90)


@pytest.mark.parametrize(
    "dtype,absolute",
    [(torch.float32, False), (torch.bfloat16, True)],
    ids=["fp32-input", "abs-of-bf16"],
)
def test_other_extremes_stay_per_lane(dtype, absolute):
    """An fp32 input has no pairs; |x| is not an input's lanes."""
    code = _extreme(dtype, "max", absolute=absolute).cuda_code_for(
        [torch.randn(64, 4096, dtype=dtype)]
    )
    assert "nvfuse::PackedExtreme<" not in code
    assert "nvfuse::MaxOp<float>()(acc_" in _phase0(code)


def _special_rows(rows, width, dtype, device):
    x = torch.randn(rows, width, device=device) * 100
    x[1, width // 2] = float("nan")
    x[2, :] = float("-inf")
    x[3, :] = float("inf")
    x[4, :] = 0.0
    x[4, ::2] = -0.0
    x[5, -1] = float("inf")
    x[6, 0] = float("-inf")
    x[7, :] = float("nan")
    x[8, -1] = torch.finfo(dtype).max
    x[9, 0] = torch.finfo(dtype).min
    return x.to(dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("width", [7, 1600, 8192, 65536])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("op", ["max", "min"])
def test_packed_extremes_equal_torch_on_the_gpu(width, dtype, op):
    x = _special_rows(33, width, dtype, "cuda")
    (got,) = _extreme(dtype, op).execute([x])
    want = getattr(torch, "a" + op)(x.float(), dim=1)
    torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)


@pytest.mark.gpu
def test_cross_entropy_forward_with_a_packed_max_matches_torch_on_the_gpu():
    logits, labels = loss_defs.cross_entropy_fwd_inputs(512, torch.bfloat16)
    logits[3, 17] = float("nan")
    (got,) = loss_defs.cross_entropy_fwd_fd(torch.bfloat16).execute([logits, labels])
    want = loss_defs.cross_entropy_fwd_torch(logits, labels)
    torch.testing.assert_close(got, want.float(), rtol=1e-5, atol=1e-5, equal_nan=True)
