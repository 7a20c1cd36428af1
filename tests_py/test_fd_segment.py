"""fd.segment(inputs): the segments execute() runs, each handed back as a
FusionDefinition of its own; run in order, they give execute()'s outputs."""

import re

import pytest
import torch

import nvfuse
from nvfuse import DataType, FusionDefinition, _C
from fusion_helpers import DEVICES, make_input

BIG = 1 << 40


def _run_segments(segments, inputs, output_count):
    values = {}
    outputs = [None] * output_count
    for j, segment in enumerate(segments):
        args = [
            inputs[s[1]] if s[0] == "input" else values[(s[1], s[2])]
            for s in segment.segment_inputs
        ]
        # A segment that reads no tensor (a full) runs where it is told.
        for k, out in enumerate(segment.execute(args, device=inputs[0].device)):
            values[(j, k)] = out
            for position in segment.segment_outputs[k]:
                outputs[position] = out
    return outputs


def _assert_segments_reproduce(fd, inputs):
    segments = fd.segment(inputs)
    expected = fd.execute(inputs)
    assert [s.segment_kind for s in segments] == [k for k, _ in fd.segment_summary()]
    actual = _run_segments(segments, inputs, len(expected))
    for a, e in zip(actual, expected):
        torch.testing.assert_close(a, e)
    return segments


def test_a_single_kernel_fusion_is_one_segment_reading_every_input():
    x, y = make_input((8, 16), torch.float32), make_input((16,), torch.float32)
    with FusionDefinition() as fd:
        a, b = fd.from_pytorch(x), fd.from_pytorch(y)
        fd.add_output(fd.ops.relu(a + b))
    (segment,) = _assert_segments_reproduce(fd, [x, y])
    assert segment.segment_inputs == [("input", 0), ("input", 1)]
    assert segment.segment_outputs == [[0]]
    assert "fd.ops.broadcast(" in repr(segment) and "fd.ops.add(" in repr(segment)


@pytest.mark.parametrize("device", DEVICES)
def test_linear_between_kernels_and_a_view_chain_in_order(device):
    x, w, b = (make_input(s, torch.float32, device=device) for s in [(4, 16, 32), (24, 32), (24,)])
    with FusionDefinition() as fd:
        X, W, B = fd.from_pytorch(x), fd.from_pytorch(w), fd.from_pytorch(b)
        s = fd.define_scalar(dtype=DataType.Double)
        y = fd.ops.linear(fd.ops.relu(X * s), W, B)
        z = fd.ops.reshape(y, [4, 16 * 24])
        fd.add_output(fd.ops.sigmoid(z))
        fd.add_output(fd.ops.sum(z, [1]))
    inputs = [x, w, b, 0.5]
    segments = _assert_segments_reproduce(fd, inputs)
    assert [s.segment_kind for s in segments] == ["fused", "aten", "view", "fused"]
    assert segments[0].segment_inputs == [("input", 0), ("input", 3)]  # the scalar stays an input
    assert segments[1].segment_inputs == [("input", 1), ("input", 2), ("segment", 0, 0)]
    assert segments[3].segment_outputs == [[0], [1]]
    assert "fd.ops.reshape(T0, new_shape=[4, 384])" in repr(segments[2])


@pytest.mark.parametrize("device", DEVICES)
def test_channels_last_inputs_keep_their_stride_order_in_each_segment(device):
    """A batch norm's statistics and normalization over a channels-last
    input (two segments): each segment's definition takes the input laid
    out as the fusion does, not only row-major ones."""
    x = make_input((4, 8, 6, 6), torch.float32, device=device)
    x = x.contiguous(memory_format=torch.channels_last)
    with FusionDefinition() as fd:
        t = fd.define_tensor(
            shape=[-1, -1, -1, -1], contiguity=True, dtype=DataType.Float, stride_order=[3, 0, 2, 1]
        )
        var, mean = fd.ops.var_mean(t, [0, 2, 3], correction=0, keepdim=True)
        fd.add_output(fd.ops.exp((t - mean) * fd.ops.rsqrt(var + 1e-5)))
    segments = _assert_segments_reproduce(fd, [x])
    assert all("stride_order=[3, 0, 2, 1]" in repr(s) for s in segments), segments


@pytest.mark.parametrize("device", DEVICES)
def test_a_permuted_input_with_a_broadcast_axis_prints_its_contiguity_in_allocation_order(
    device,
):
    """A [1, N, M] input laid out M-major (stride_order [1, 0, 2]): its
    segment definition lists contiguity outermost first by stride_order,
    with None where the broadcast axis falls in that order."""
    x = make_input((8, 1, 6), torch.float32, device=device).permute(1, 2, 0)
    with FusionDefinition() as fd:
        t = fd.define_tensor(
            shape=[1, -1, -1],
            contiguity=[True, None, True],
            dtype=DataType.Float,
            stride_order=[1, 0, 2],
        )
        total = fd.ops.sum(t, [1], keepdim=True)
        fd.add_output(fd.ops.exp(t - total))
    segments = _assert_segments_reproduce(fd, [x])
    assert "stride_order=[1, 0, 2]" in repr(segments[0])


@pytest.mark.parametrize("device", DEVICES)
def test_half_precision_casts_slices_and_pads_around_a_reduction(device):
    x = make_input((6, 40), torch.bfloat16, device=device)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        sliced = fd.ops.slice(t, [0, 8], [BIG, 40])
        wide = fd.ops.pad(fd.ops.cast(sliced, DataType.Float), [1, 2], 0.0)
        total = fd.ops.sum(wide, [1], keepdim=True)
        fd.add_output(fd.ops.cast(wide / total, DataType.BFloat16))
    segments = _assert_segments_reproduce(fd, [x])
    text = "".join(repr(s) for s in segments)
    assert "fd.ops.slice(" in text and "fd.ops.pad(" in text


def test_matmul_with_an_expanded_bias():
    a, b = make_input((8, 12), torch.float32), make_input((12, 5), torch.float32)
    bias = make_input((1, 5), torch.float32)
    with FusionDefinition() as fd:
        A, B, C = fd.from_pytorch(a), fd.from_pytorch(b), fd.from_pytorch(bias)
        fd.add_output(fd.ops.matmul(A, B) + fd.ops.expand(C, [8, 5]))
    _assert_segments_reproduce(fd, [a, b, bias])


@pytest.mark.parametrize("device", DEVICES)
def test_indexing_and_creation_ops_next_to_reductions(device):
    x = make_input((6, 10), torch.float32, device=device)
    table = make_input((12, 10), torch.float32, device=device)
    rows = torch.tensor([3, 0, 11, 5, 5, 1], device=device)
    labels = torch.tensor([[1], [0], [9], [4], [4], [2]], device=device)
    with FusionDefinition() as fd:
        X, T, R, L = (fd.from_pytorch(t) for t in (x, table, rows, labels))
        embedded = fd.ops.embedding_fwd(R, T)
        picked = fd.ops.index_select(T, R, 0)
        h = fd.ops.cumsum(X + embedded, 1) + fd.ops.triu(picked, 1)
        h = h + fd.ops.full([6, 10], 0.5, DataType.Float)
        fd.add_output(fd.ops.sum(h, [1]))
        fd.add_output(fd.ops.gather(h, L, 1))
        fd.add_output(fd.ops.select(h, 2, 0))
    segments = _assert_segments_reproduce(fd, [x, table, rows, labels])
    text = "".join(repr(s) for s in segments)
    for op in ["embedding_fwd", "index_select", "cumsum", "triu", "full", "gather", "select"]:
        assert f"fd.ops.{op}(" in text


@pytest.mark.parametrize("device", DEVICES)
def test_random_ops_with_an_explicit_seed_reproduce(device):
    x = make_input((4, 8), torch.float32, device=device)
    w = make_input((8, 8), torch.float32, device=device)
    with FusionDefinition() as fd:
        t, u = fd.from_pytorch(x), fd.from_pytorch(w)
        seed, offset = fd.define_scalar(dtype=DataType.Int), fd.define_scalar(dtype=DataType.Int)
        h = fd.ops.matmul(t, u)
        noise = fd.ops.randn_like(t, rng_seed=seed, rng_offset=offset)
        fd.add_output(fd.ops.sum(h + noise, [1]))
    segments = _assert_segments_reproduce(fd, [x, w, 7, 8])
    assert re.search(
        r"fd\.ops\.normal\(S\d+, S\d+, shape=\[4, 8\], rng_seed=S\d+, "
        r"rng_offset=S\d+",
        repr(segments[1]),
    )


def test_drawn_random_ops_print_without_a_seed():
    # Each run of the segment draws its own seed, as the fusion does.
    x = make_input((4, 8), torch.float32)
    with FusionDefinition() as fd:
        t = fd.from_pytorch(x)
        fd.add_output(fd.ops.sum(t * fd.ops.rand_like(t), [1]))
    (segment,) = fd.segment([x])
    assert re.search(
        r"fd\.ops\.uniform\(S\d+, S\d+, shape=\[4, 8\], rng_seed=None, "
        r"rng_offset=None, dtype=DataType\.Float\)",
        repr(segment),
    )
    (out,) = segment.execute([x])
    assert out.shape == (4,)


@pytest.mark.parametrize("device", DEVICES)
def test_attention_forward_and_backward_segments_reproduce(device):
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 16, 32, dtype=torch.bfloat16, device=device) for _ in range(3))
    with FusionDefinition() as fd:
        tq, tk, tv = (fd.from_pytorch(t) for t in (q, k, v))
        out, lse, seed, offset = fd.ops.sdpfa_fwd(
            fd.ops.mul(tq, 2.0), tk, tv, dropout_p=0.0, is_causal=True
        )
        grads = fd.ops.sdpfa_bwd(out, tq, tk, tv, out, lse, 0.0, True, seed, offset, scale=0.25)
        fd.add_output(out)
        for g in grads:
            fd.add_output(g)
    segments = _assert_segments_reproduce(fd, [q, k, v])
    text = "".join(repr(s) for s in segments)
    assert re.search(
        r"= fd\.ops\.sdpfa_fwd\(T2, T0, T1, dropout_p=S\d+, is_causal=S\d+, "
        r"scale=None\)",
        text,
    )
    assert re.search(
        r"= fd\.ops\.sdpfa_bwd\(T3, T0, T1, T2, T3, T4, dropout_p=S\d+, "
        r"is_causal=S\d+, philox_seed=T5, philox_offset=T6, scale=S\d+\)",
        text,
    )


def test_wrong_inputs_are_an_input_error():
    x = make_input((4, 8), torch.float32)
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.neg(fd.from_pytorch(x)))
    with pytest.raises(nvfuse.InputError):
        fd.segment([])


@pytest.mark.parametrize("device", DEVICES)
def test_a_fusion_reading_no_tensor_runs_on_the_device_asked(device):
    with FusionDefinition() as fd:
        fd.add_output(fd.ops.full([3, 4], 2.0, DataType.Float) * 3.0)
    (out,) = fd.execute([], device=device)
    assert out.device.type == device
    torch.testing.assert_close(out.cpu(), torch.full((3, 4), 6.0))
    (out,) = fd.execute([])
    assert out.device.type == "cpu"


def test_outputs_of_known_different_sizes_are_separate_kernels():
    # One kernel iterates one output shape; with both sizes fixed in the
    # definition the split is made up front, not by a kernel declining
    # every launch (which would leave the reference evaluator to run it).
    with FusionDefinition() as fd:
        x = fd.define_tensor(shape=[4, 8], contiguity=True)
        fd.add_output(fd.ops.neg(fd.ops.slice(x, [0, 0], [4, 4])))
        fd.add_output(fd.ops.mul(x, 2.0))
    x = torch.randn(4, 8)
    first, second = fd.execute([x])
    torch.testing.assert_close(first, -x[:, :4])
    torch.testing.assert_close(second, x * 2)
    assert _C.segment_summary(fd.id()) == [("fused", ["slice", "neg"]), ("fused", ["mul"])]


def test_a_deep_chain_of_scalars_prints_in_linear_time():
    # `s * 2 + s` reads s twice: a printer that does not remember which
    # scalars it found computable walked 2^30 paths (50 s) for 30 levels.
    import time

    with FusionDefinition() as fd:
        x = fd.define_tensor([-1], contiguity=True, dtype=DataType.Float)
        s = fd.define_scalar(dtype=DataType.Double)
        for _ in range(30):
            s = s * 2.0 + s
        fd.add_output(x * s)
    inputs = [torch.ones(4), 1.0]
    start = time.perf_counter()
    (segment,) = fd.segment(inputs)
    assert time.perf_counter() - start < 1.0
    torch.testing.assert_close(segment.execute(inputs)[0], fd.execute(inputs)[0])
