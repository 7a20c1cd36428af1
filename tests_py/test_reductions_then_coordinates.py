"""A fusion with reductions whose other work needs the coordinate kernel
runs as two kernels, the reductions and then one coordinate kernel, rather
than a kernel per slice, pad and permute: rotary embedding's backward after
the sum over grouped-query heads, as AOTAutograd hands it over."""

import pytest
import torch

from fusion_helpers import DEVICES, assert_close, make_input, run_fusion

BATCH, KV_HEADS, REPEATS, SEQ, HEAD_DIM = 2, 2, 3, 8, 16
HALF = HEAD_DIM // 2


def _rotary_backward(fd, grad, cos, sin):
    """d(k * cos + rotate_half(k) * sin)/dk for k repeated over query
    heads: the repeats' sum, then rotate_half's transpose as slices, pads
    and a negation, the result laid out [batch, seq, heads, dim]."""
    summed = fd.ops.sum(grad, dims=[2])
    rotated = summed * sin
    upper = fd.ops.slice(rotated, [0, 0, 0, HALF], [BATCH, KV_HEADS, SEQ, HEAD_DIM], [1, 1, 1, 1])
    lower = fd.ops.slice(rotated, [0, 0, 0, 0], [BATCH, KV_HEADS, SEQ, HALF], [1, 1, 1, 1])
    unrotated = fd.ops.pad(upper, [0, HALF, 0, 0, 0, 0, 0, 0]) + fd.ops.pad(
        fd.ops.neg(lower), [HALF, 0, 0, 0, 0, 0, 0, 0]
    )
    return fd.ops.permute(summed * cos + unrotated, [0, 2, 1, 3])


def _expected(grad, cos, sin):
    summed = grad.sum(2)
    rotated = summed * sin
    unrotated = torch.cat([rotated[..., HALF:], -rotated[..., :HALF]], -1)
    return (summed * cos + unrotated).permute(0, 2, 1, 3)


def _inputs(device):
    grad = make_input((BATCH, KV_HEADS, REPEATS, SEQ, HEAD_DIM), torch.float32, device=device)
    cos = make_input((SEQ, HEAD_DIM), torch.float32, device=device)
    sin = make_input((SEQ, HEAD_DIM), torch.float32, device=device)
    return [grad, cos, sin]


def test_rotary_backward_is_a_reduction_then_one_coordinate_kernel():
    _, fd = run_fusion(_rotary_backward, _inputs("cpu"))
    summary = fd.segment_summary()
    assert [kind for kind, _ in summary] == ["fused", "fused"]
    assert summary[0][1] == ["sum"]
    assert {"slice", "pad", "neg", "permute"} <= set(summary[1][1])


@pytest.mark.parametrize("device", DEVICES)
def test_rotary_backward_matches_torch(device):
    inputs = _inputs(device)
    (out,), _ = run_fusion(_rotary_backward, inputs)
    assert_close(out, _expected(*inputs))


def test_work_no_kernel_takes_keeps_the_cuts():
    # A matmul after the reduction's slice: the rest is no one kernel, so
    # the fusion is cut at the ATen ops as before.
    x, w = torch.randn(4, 8), torch.randn(4, 4)

    def build(fd, t, weight):
        centered = t - fd.ops.sum(t, [1], keepdim=True)
        return fd.ops.matmul(fd.ops.slice(centered, [0, 0], [4, 4], [1, 1]), weight)

    (out,), fd = run_fusion(build, [x, w])
    assert len(fd.segment_summary()) > 2
    assert_close(out, (x - x.sum(1, keepdim=True))[:, :4] @ w)
