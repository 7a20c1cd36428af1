"""Cutting fusions at ATen ops (matmul, linear, shape, indexing, random):
segment counts and kinds asserted without a GPU, numerics against torch on
the CPU and (marked) the GPU, and the generated kernels of the fused parts."""

import pytest
import torch

from nvfuse import _C, DataType
from fusion_helpers import DEVICES, assert_close, make_input, run_fusion


def _mlp_block(fd, x, w1, b1, w2):
    """linear -> bias + tanh-GELU -> linear, as a transformer MLP."""
    h = fd.ops.linear(x, w1)
    h = fd.ops.cast(h, DataType.Float)
    h = h + fd.ops.cast(fd.ops.broadcast_in_dim(b1, [2, 8, 64], [2]), DataType.Float)
    inner = fd.ops.tanh((h + h * h * h * 0.044715) * 0.7978845608)
    h = fd.ops.cast(h * 0.5 * (inner + 1.0), DataType.BFloat16)
    return fd.ops.linear(h, w2)


def _mlp_inputs(device):
    x = make_input((2, 8, 32), torch.bfloat16, device=device)
    w1 = make_input((64, 32), torch.bfloat16, device=device) / 8
    b1 = make_input((64,), torch.bfloat16, device=device)
    w2 = make_input((32, 64), torch.bfloat16, device=device) / 8
    return [x, w1, b1, w2]


def test_pointwise_only_fusion_is_one_segment():
    _, fd = run_fusion(lambda fd, t: fd.ops.relu(t) * 2.0, [torch.randn(3)])
    assert fd.segment_summary() == [("fused", ["relu", "mul"])]


def test_mlp_block_is_linear_epilogue_kernel_linear():
    _, fd = run_fusion(_mlp_block, _mlp_inputs("cpu"))
    kinds = [kind for kind, _ in fd.segment_summary()]
    assert kinds == ["aten", "fused", "aten"]
    ops = fd.segment_summary()[1][1]
    # The bias broadcast runs in the epilogue kernel, not a kernel of its own.
    assert "broadcast" in ops and "tanh" in ops


@pytest.mark.parametrize("device", DEVICES)
def test_mlp_block_matches_torch(device):
    x, w1, b1, w2 = _mlp_inputs(device)
    (out,), _ = run_fusion(_mlp_block, [x, w1, b1, w2])
    h = torch.nn.functional.linear(x, w1).float() + b1.float()
    h = torch.nn.functional.gelu(h, approximate="tanh").bfloat16()
    expected = torch.nn.functional.linear(h, w2)
    torch.testing.assert_close(out.float(), expected.float(), rtol=3e-2, atol=3e-2)


def test_independent_work_on_inputs_joins_its_consumer_kernel():
    x, w = torch.randn(4, 8), torch.randn(8, 8)

    def build(fd, a, b):
        return fd.ops.exp(fd.ops.matmul(a, b)) + fd.ops.sin(a)

    (out,), fd = run_fusion(build, [x, w])
    assert [k for k, _ in fd.segment_summary()] == ["aten", "fused"]
    assert_close(out, torch.exp(x @ w) + torch.sin(x))


def test_reshape_between_pointwise_ops_is_one_coordinate_kernel():
    x = torch.randn(4, 6)

    def build(fd, t):
        return fd.ops.reshape(fd.ops.relu(t), [2, 12]) * 3.0

    (out,), fd = run_fusion(build, [x])
    assert fd.segment_summary() == [("fused", ["relu", "reshape", "mul"])]
    assert "CoordinateParams" in fd.cuda_code_for([x])
    assert_close(out, x.relu().reshape(2, 12) * 3.0)


@pytest.mark.parametrize("device", DEVICES)
def test_reshape_between_reduction_kernels_stays_an_aten_view(device):
    # Next to reductions a reshape is cut out; alone it is no copy kernel
    # but an ATen reshape, a view of the first kernel's output.
    x = make_input((4, 6), torch.float32, device=device)

    def build(fd, t):
        rows = fd.ops.reshape(fd.ops.relu(t) - fd.ops.sum(t, [1], keepdim=True), [2, 12])
        return fd.ops.sum(rows, [1])

    (out,), fd = run_fusion(build, [x])
    assert fd.segment_summary()[1] == ("aten", ["reshape"])
    assert_close(out, (x.relu() - x.sum(1, keepdim=True)).reshape(2, 12).sum(1))


def test_fused_parts_print_their_generated_kernels():
    inputs = _mlp_inputs("cpu")
    _, fd = run_fusion(_mlp_block, inputs)
    code = fd.cuda_code_for(inputs)
    assert code.count("// ==== nvfuse segment: fused ====") == 1
    assert "__global__" in code and "tanh" in code


@pytest.mark.parametrize("device", DEVICES)
def test_cross_entropy_forward_matches_torch(device):
    """log-softmax + take_along_axis + mean: a reduction kernel, the gather
    on ATen, and the final reduction."""
    logits = make_input((16, 40), torch.float32, device=device)
    labels = torch.randint(0, 40, (16,), device=device)

    def build(fd, x, y):
        m = fd.ops.max(x, [1], keepdim=True)
        shifted = x - m
        lse = fd.ops.log(fd.ops.sum(fd.ops.exp(shifted), [1], keepdim=True))
        logp = shifted - lse
        picked = fd.ops.take_along_axis(logp, fd.ops.broadcast_in_dim(y, [16, 1], [0]), 1)
        return fd.ops.neg(fd.ops.mean(picked))

    (loss,), fd = run_fusion(build, [logits, labels])
    assert "aten" in [k for k, _ in fd.segment_summary()]
    assert_close(loss, torch.nn.functional.cross_entropy(logits, labels))


@pytest.mark.gpu
def test_epilogue_of_a_linear_runs_as_a_generated_kernel_on_cuda():
    inputs = _mlp_inputs("cuda")
    _, fd = run_fusion(_mlp_block, inputs)
    code = fd.last_cuda_code()
    assert code.count("// ==== nvfuse segment: fused ====") == 1
    assert "__global__" in code


def test_a_cut_fusion_checks_the_argument_count():
    from nvfuse.errors import InputError

    x = torch.randn(4, 6)
    _, fd = run_fusion(lambda fd, t: fd.ops.reshape(fd.ops.relu(t), [2, 12]), [x])
    with pytest.raises(InputError, match="takes 1 inputs, but 2 were given"):
        fd.execute([x, x])


def _split_by_segment_set(fd, a, b):
    """(relu(a) * b) -> segment_set -> exp + the product's row sums."""
    product = fd.ops.relu(a) * b
    moved = fd.ops.segment_set(product)
    return fd.ops.exp(moved) + fd.ops.sum(moved, [1], keepdim=True)


@pytest.mark.parametrize("device", DEVICES)
def test_segment_set_starts_a_new_kernel(device):
    """segment_set is a segmentation hint: what it reads is written by one
    kernel and the set heads the next, instead of one fused kernel."""
    a = make_input((16, 32), torch.float32, device=device)
    b = make_input((16, 32), torch.float32, device=device)
    (out,), fd = run_fusion(_split_by_segment_set, [a, b])
    summary = fd.segment_summary()
    assert [kind for kind, _ in summary] == ["fused", "fused"], summary
    assert summary[0][1] == ["relu", "mul"] and summary[1][1][0] == "segment_set", summary
    product = torch.relu(a) * b
    assert_close(out, torch.exp(product) + product.sum(1, keepdim=True))
    # Two generated kernels, each compiled by NVRTC.
    parts = fd.cuda_code_for([a.cpu(), b.cpu()]).split("// ==== nvfuse segment: fused ====")[1:]
    assert len(parts) == 2
    for part, kernel in zip(parts, ["nvfuse_pointwise", "nvfuse_reduction"]):
        assert kernel in part
        assert _C.nvrtc_compile(part, kernel, 90)["bytes"] > 0


def test_without_segment_set_the_same_work_is_one_kernel():
    def fused(fd, a, b):
        product = fd.ops.relu(a) * b
        return fd.ops.exp(product) + fd.ops.sum(product, [1], keepdim=True)

    _, fd = run_fusion(fused, [torch.randn(16, 32), torch.randn(16, 32)])
    assert [kind for kind, _ in fd.segment_summary()] == ["fused"]


def test_segment_set_of_an_input_adds_no_kernel():
    _, fd = run_fusion(lambda fd, t: fd.ops.exp(fd.ops.segment_set(t)), [torch.randn(5)])
    assert [kind for kind, _ in fd.segment_summary()] == ["fused"]
