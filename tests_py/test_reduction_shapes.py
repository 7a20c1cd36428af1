"""Reductions of the same axes of differently sized tensors (Thunder's
attention backward: the qkv bias gradient sums 768 columns, the projection
bias and a norm weight 256) must not share a kernel, which walks one shape:
the shared kernel wrote the 768-column result's extent into the 256-column
outputs and corrupted the memory after them."""

import pytest
import torch

from nvfuse import FusionDefinition


def _column_sums(shape_a, shape_b):
    with FusionDefinition() as fd:
        a = fd.define_tensor(shape_a, contiguity=True)
        b = fd.define_tensor(shape_b, contiguity=True)
        c = fd.define_tensor(shape_b, contiguity=True)
        fd.add_output(fd.ops.sum(a, dims=[0, 1]))
        fd.add_output(fd.ops.sum(b, dims=[0, 1]))
        fd.add_output(fd.ops.sum(fd.ops.mul(c, b), dims=[0, 1]))
    return fd


def _kernel_count(fd, width):
    """Generated kernels for these inputs (CPU tensors stand in)."""
    code = fd.cuda_code_for(
        [torch.randn(4, 128, width), torch.randn(4, 128, 256), torch.randn(4, 128, 256)]
    )
    return max(1, code.count("// ==== nvfuse segment"))


def test_sums_over_different_column_counts_are_separate_kernels():
    assert _kernel_count(_column_sums([4, 128, 768], [4, 128, 256]), 768) == 2


def test_sums_over_equal_column_counts_share_a_kernel():
    assert _kernel_count(_column_sums([4, 128, 256], [4, 128, 256]), 256) == 1


def _check(fd, a, b, c):
    guard = torch.full((1 << 16,), 7.0, device=a.device)  # memory nearby
    sa, sb, sbc = fd.execute([a, b, c])
    # Sums of 512 unit normals (magnitude about 22) in another order than
    # torch's: an entry that cancels to near 0 differs by about 1e-5, past
    # assert_close's default float32 tolerance.
    torch.testing.assert_close(sa, a.sum(dim=(0, 1)), rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(sb, b.sum(dim=(0, 1)), rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(sbc, (b * c).sum(dim=(0, 1)), rtol=1e-4, atol=1e-4)
    assert bool((guard == 7.0).all())


@pytest.mark.gpu
def test_static_sizes_sum_each_tensor_on_the_gpu():
    fd = _column_sums([4, 128, 768], [4, 128, 256])
    a = torch.randn(4, 128, 768, device="cuda")
    b, c = torch.randn(4, 128, 256, device="cuda"), torch.randn(4, 128, 256, device="cuda")
    _check(fd, a, b, c)


@pytest.mark.gpu
def test_symbolic_sizes_that_differ_at_run_time_on_the_gpu():
    fd = _column_sums([-1, -1, -1], [-1, -1, -1])
    a = torch.randn(4, 128, 768, device="cuda")
    b, c = torch.randn(4, 128, 256, device="cuda"), torch.randn(4, 128, 256, device="cuda")
    _check(fd, a, b, c)
    # and equal sizes still take one generated kernel
    _check(fd, torch.randn(4, 128, 256, device="cuda"), b, c)
    assert fd.last_cuda_code()


def _mlp_backward_sums():
    """The bias and norm-weight sums of the two-layer MLP's backward
    (nn.Linear(256, 1024), nn.LayerNorm(1024), nn.Linear(1024, 256),
    nn.LayerNorm(256) on 64 rows) in one definition: two widths."""
    with FusionDefinition() as fd:
        wide = fd.define_tensor([64, 1024], contiguity=True)
        wide_xhat = fd.define_tensor([64, 1024], contiguity=True)
        narrow = fd.define_tensor([64, 256], contiguity=True)
        narrow_xhat = fd.define_tensor([64, 256], contiguity=True)
        fd.add_output(fd.ops.sum(narrow, dims=[0]))
        fd.add_output(fd.ops.sum(narrow * narrow_xhat, dims=[0]))
        fd.add_output(fd.ops.sum(wide, dims=[0]))
        fd.add_output(fd.ops.sum(wide * wide_xhat, dims=[0]))
    return fd


def _mlp_inputs(device):
    torch.manual_seed(3)
    return [
        torch.randn(64, 1024, device=device),
        torch.randn(64, 1024, device=device),
        torch.randn(64, 256, device=device),
        torch.randn(64, 256, device=device),
    ]


def test_mlp_backward_sums_take_one_kernel_per_width():
    code = _mlp_backward_sums().cuda_code_for(_mlp_inputs("cpu"))
    assert code.count("// ==== nvfuse segment") == 2


@pytest.mark.gpu
def test_mlp_backward_sums_write_only_their_outputs_on_the_gpu():
    wide, wide_xhat, narrow, narrow_xhat = inputs = _mlp_inputs("cuda")
    guard = torch.full((1 << 16,), 7.0, device="cuda")
    outs = _mlp_backward_sums().execute(inputs)
    expected = [
        narrow.sum(0),
        (narrow * narrow_xhat).sum(0),
        wide.sum(0),
        (wide * wide_xhat).sum(0),
    ]
    for out, want in zip(outs, expected):
        torch.testing.assert_close(out, want, rtol=1e-4, atol=1e-4)
    assert bool((guard == 7.0).all())
