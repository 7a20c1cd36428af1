"""Alias analysis (bookending): metadata-only ops at a fusion's edges run as
zero-copy views on the host; outputs that can be views are views of what
they view; and where bookending would cost a kernel its vectorization or
an extra kernel, it is not done."""

import pytest
import torch

from nvfuse import FusionDefinition
from fusion_helpers import DEVICES, make_input
from test_seed_layer_norm import nvfuser_fusion_id0

BIG = 1 << 40


def _kinds(fd):
    return [kind for kind, _ in fd.segment_summary()]


def _shares_storage(a, b):
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def _define(build, inputs, **output_kwargs):
    with FusionDefinition() as fd:
        handles = [fd.from_pytorch(t) for t in inputs]
        outs = build(fd, *handles)
        for out in outs if isinstance(outs, (list, tuple)) else [outs]:
            fd.add_output(out, **output_kwargs)
    return fd


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "name, build, torch_fn",
    [
        ("permute", lambda fd, x: fd.ops.permute(x, [2, 0, 1]), lambda x: x.permute(2, 0, 1)),
        ("slice", lambda fd, x: fd.ops.slice(x, [1, 0, 2], [3, BIG, 6]), lambda x: x[1:3, :, 2:6]),
        (
            "squeeze",
            lambda fd, x: fd.ops.squeeze(fd.ops.slice(x, [0, 1, 0], [BIG, 2, BIG]), [1]),
            lambda x: x[:, 1],
        ),
        (
            "reshape_of_slice",
            lambda fd, x: fd.ops.reshape(fd.ops.slice(x, [0, 0, 0], [2, BIG, BIG]), [2, -1]),
            lambda x: x[:2].reshape(2, -1),
        ),
    ],
)
def test_an_output_that_is_a_view_of_an_input_is_that_view(name, build, torch_fn, device):
    x = make_input((4, 5, 8), torch.float32, device=device)
    fd = _define(build, [x])
    (out,) = fd.execute([x])
    expected = torch_fn(x)
    assert torch.equal(out, expected)
    assert _shares_storage(out, x) and out.stride() == expected.stride()
    assert _kinds(fd) == ["view"]  # one host segment for the chain, no kernel


@pytest.mark.parametrize("device", DEVICES)
def test_a_permuted_kernel_result_is_written_once_and_viewed(device):
    x = make_input((16, 32), torch.float32, device=device)
    fd = _define(lambda fd, t: fd.ops.permute(fd.ops.relu(t), [1, 0]), [x])
    (out,) = fd.execute([x])
    assert torch.equal(out, torch.relu(x).t())
    assert out.stride() == (1, 32)  # the kernel wrote relu(x) row-major
    assert _kinds(fd) == ["fused", "view"]


@pytest.mark.parametrize("device", DEVICES)
def test_a_slice_of_a_kernel_result_stays_in_the_kernel(device):
    # Bookending it would make the kernel write elements nobody reads.
    x = make_input((16, 32), torch.float32, device=device)
    fd = _define(lambda fd, t: fd.ops.slice(fd.ops.relu(t), [0, 0], [BIG, 4]), [x])
    (out,) = fd.execute([x])
    assert torch.equal(out, torch.relu(x)[:, :4]) and out.is_contiguous()
    assert _kinds(fd) == ["fused"]


@pytest.mark.parametrize("device", DEVICES)
def test_an_output_with_its_own_stride_order_is_written_not_viewed(device):
    x = make_input((4, 6), torch.float32, device=device)
    fd = _define(lambda fd, t: fd.ops.permute(t, [1, 0]), [x], stride_order=[0, 1])
    (out,) = fd.execute([x])
    assert torch.equal(out, x.t()) and out.stride() == (1, 6)
    assert not _shares_storage(out, x)


@pytest.mark.parametrize("device", DEVICES)
def test_a_slice_of_an_input_into_a_reduction_is_a_view_not_a_copy_kernel(device):
    x = make_input((8, 64), torch.float32, device=device)
    fd = _define(lambda fd, t: fd.ops.sum(fd.ops.slice(t, [0, 8], [BIG, 40]), [1]), [x])
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, x[:, 8:40].sum(1))
    assert _kinds(fd) == ["view", "fused"]


@pytest.mark.parametrize("device", DEVICES)
def test_a_view_and_its_base_read_by_one_reduction_stay_one_kernel(device):
    # The view costs no ATen depth: the kernel reading x and x.T is one.
    x = make_input((32, 32), torch.float32, device=device)
    fd = _define(lambda fd, t: fd.ops.sum(t + fd.ops.permute(t, [1, 0]), [1]), [x])
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, (x + x.t()).sum(1))
    assert _kinds(fd) == ["view", "fused"]


@pytest.mark.parametrize("device", DEVICES)
def test_a_permuted_input_of_an_elementwise_fusion_is_a_view(device):
    # The kernel then reads x through its transposed strides, a tile at a
    # time (the transpose scheduler), instead of element by element.
    x = make_input((48, 64), torch.float32, device=device)
    y = make_input((64, 48), torch.float32, device=device)
    fd = _define(lambda fd, a, b: fd.ops.relu(fd.ops.permute(a, [1, 0]) + b), [x, y])
    (out,) = fd.execute([x, y])
    torch.testing.assert_close(out, torch.relu(x.t() + y))
    assert _kinds(fd) == ["view", "fused"]


def test_a_permute_next_to_a_slice_stays_in_the_coordinate_kernel():
    x = make_input((48, 64), torch.float32)
    fd = _define(lambda fd, a: fd.ops.slice(fd.ops.permute(a, [1, 0]), [0, 0], [32, 48]) * 2.0, [x])
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, x.t()[:32] * 2.0)
    assert _kinds(fd) == ["fused"]


def test_slices_feeding_a_reduction_free_kernel_stay_inside_it():
    # RoPE's slices: the coordinate kernel reads them with no extra traffic
    # and no host latency, so they are not bookended.
    x = make_input((4, 16), torch.float32)
    fd = _define(
        lambda fd, t: (
            fd.ops.cat(
                [
                    fd.ops.neg(fd.ops.slice(t, [0, 8], [BIG, BIG])),
                    fd.ops.slice(t, [0, 0], [BIG, 8]),
                ],
                1,
            )
            * t
        ),
        [x],
    )
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, torch.cat([-x[:, 8:], x[:, :8]], 1) * x)
    assert _kinds(fd) == ["fused"]


def test_seed_layer_norm_broadcasts_are_not_bookended():
    # Seed 002: bookending the weight's broadcast+expand gave the kernel a
    # stride-0 3-D input and dropped its vectorization to 1.
    with FusionDefinition() as fd:
        nvfuser_fusion_id0(fd)
    assert _kinds(fd) == ["fused"]


@pytest.mark.parametrize("device", DEVICES)
def test_in_place_update_through_reshapes_reaches_the_callers_tensor(device):
    x = make_input((4, 6), torch.float32, device=device)
    original = x.clone()
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        flat = fd.ops.reshape(t, [24])
        updated = fd.ops.reshape(flat * 2.0 + 1.0, [4, 6])
        fd.add_output(updated, t)
        fd.add_output(fd.ops.sum(flat, [0]))
    outs = fd.execute([x])
    assert len(outs) == 1
    torch.testing.assert_close(x, original * 2 + 1)
    torch.testing.assert_close(outs[0], original.sum())


@pytest.mark.parametrize("device", DEVICES)
def test_views_on_matmul_results_are_views(device):
    a = make_input((6, 8), torch.float32, device=device)
    b = make_input((8, 12), torch.float32, device=device)
    with FusionDefinition() as fd:
        ta, tb = fd.from_pytorch(a), fd.from_pytorch(b)
        product = fd.ops.matmul(ta, tb)
        fd.add_output(product)
        fd.add_output(fd.ops.reshape(fd.ops.permute(product, [1, 0]), [2, 6, 6]))
    product, viewed = fd.execute([a, b])
    torch.testing.assert_close(viewed, (a @ b).t().reshape(2, 6, 6))
    assert _kinds(fd) == ["aten", "view"]


@pytest.mark.parametrize("device", DEVICES)
def test_cross_entropy_label_gather_joins_the_reduction_kernel(device):
    """The label's logit read from the input row: the reduction kernel does
    it once per row (with the broadcast and squeeze around it)."""
    logits = make_input((8, 32), torch.float32, device=device)
    labels = torch.randint(0, 32, (8,), device=device)
    with FusionDefinition() as fd:
        x, y = fd.from_pytorch(logits), fd.from_pytorch(labels)
        picked = fd.ops.squeeze(
            fd.ops.take_along_axis(x, fd.ops.broadcast(y, [False, True]), 1), [1]
        )
        fd.add_output(fd.ops.log(fd.ops.sum(fd.ops.exp(x), [1])) - picked)
    (loss,) = fd.execute([logits, labels])
    torch.testing.assert_close(
        loss, torch.nn.functional.cross_entropy(logits, labels, reduction="none")
    )
    assert _kinds(fd) == ["fused"]


@pytest.mark.parametrize("device", DEVICES)
def test_a_gather_of_a_computed_row_and_its_views_run_after_the_reduction(device):
    """A gather from a value the reduction kernel computes runs in the
    coordinate kernel after it, with the label's broadcast and the squeeze
    around it (segment/reductions_then_coordinates.h): two launches, where
    cutting at the gather made two views, an ATen gather and two kernels."""
    logits = make_input((8, 32), torch.float32, device=device)
    labels = torch.randint(0, 32, (8,), device=device)
    with FusionDefinition() as fd:
        x, y = fd.from_pytorch(logits), fd.from_pytorch(labels)
        scaled = x * 2.0
        picked = fd.ops.squeeze(
            fd.ops.take_along_axis(scaled, fd.ops.broadcast(y, [False, True]), 1), [1]
        )
        fd.add_output(fd.ops.log(fd.ops.sum(fd.ops.exp(scaled), [1])) - picked)
    (loss,) = fd.execute([logits, labels])
    torch.testing.assert_close(
        loss, torch.nn.functional.cross_entropy(logits * 2.0, labels, reduction="none")
    )
    assert _kinds(fd) == ["fused", "fused"]
    assert "take_along_axis" in fd.segment_summary()[1][1]
