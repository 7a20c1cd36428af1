"""Batch norm as the torch.compile backend's graphs give it (the
statistics reduced in two stages by split_reductions, the running
statistics updated in place through squeezes to [C]) runs in few kernels:
the squeezed per-channel outputs and the in-place updates join the second
stage's reduction kernel, and the backward's two second-stage sums share
one kernel. Segment decisions and generated code are checked without a
GPU (NVRTC), values on the CPU path; the GPU tests run the kernels and
count the launches."""

import re

import pytest
import torch

from nvfuse import _C, FusionDefinition
from fusion_helpers import assert_close

N, C = 4, 8


def compile_kernels(code):
    """Compiles each kernel of `code` (generated, one segment a part) with
    NVRTC for sm_90; their count."""
    parts = [p for p in code.split("// ==== nvfuse segment: fused ====\n") if "__global__" in p]
    for part in parts:
        name = re.search(r"__global__ void (?:__launch_bounds__\([^)]*\) )?(\w+)\(", part)[1]
        assert _C.nvrtc_compile(part, name, 90)["bytes"] > 0
    return len(parts)


def _second_stage_with_running_mean():
    """[N, C, 1, 1] partial sums reduced over N, the mean squeezed to [C]
    and folded into the running mean, which the fusion updates in place."""
    with FusionDefinition() as fd:
        partials = fd.define_tensor([N, C, 1, 1], contiguity=[True, True, None, None])
        running = fd.define_tensor([C], contiguity=True)
        total = fd.ops.sum(partials, [0])
        mean = fd.ops.squeeze(fd.ops.broadcast(total, [True, False, False, False]), [0, 2, 3])
        mean = fd.ops.mul(mean, 1.0 / N)
        updated = fd.ops.add(fd.ops.mul(mean, 0.1), fd.ops.mul(running, 0.9))
        fd.add_output(mean)
        fd.add_output(updated, alias_input=running)
    return fd


def _two_second_stages():
    """The backward's two per-channel sums, each from [N, C, 1, 1] partials
    that one kernel made, squeezed and scaled by the weight."""
    with FusionDefinition() as fd:
        x = fd.define_tensor([N, C, 5, 6], contiguity=True)
        y = fd.define_tensor([N, C, 5, 6], contiguity=True)
        weight = fd.define_tensor([C], contiguity=True)
        outs = []
        for t in (x, fd.ops.mul(x, y)):
            partial = fd.ops.sum(t, [2, 3], keepdim=True)
            total = fd.ops.sum(partial, [0])
            squeezed = fd.ops.squeeze(
                fd.ops.broadcast(total, [True, False, False, False]), [0, 2, 3]
            )
            outs.append(fd.ops.mul(squeezed, weight))
        for out in outs:
            fd.add_output(out)
    return fd


def test_squeezed_per_channel_outputs_join_the_reduction_kernel():
    # The squeeze to [C] left the update to a kernel of its own (and its
    # in-place write to a copy after it): three launches for one.
    fd = _second_stage_with_running_mean()
    kinds = [kind for kind, _ in fd.segment_summary()]
    assert len(kinds) == 1, fd.segment_summary()
    partials, running = torch.randn(N, C, 1, 1), torch.randn(C)
    code = fd.cuda_code_for([partials, running])
    assert "runs on the ATen reference evaluator" not in code
    assert compile_kernels(code) == 1
    want_mean = partials.sum(0).reshape(C) / N
    want_running = want_mean * 0.1 + running * 0.9
    (mean,) = fd.execute([partials, running])
    assert_close(mean, want_mean)
    assert_close(running, want_running)


def test_the_backward_second_stages_share_one_kernel():
    fd = _two_second_stages()
    assert len(fd.segment_summary()) == 2, fd.segment_summary()
    x, y, weight = torch.randn(N, C, 5, 6), torch.randn(N, C, 5, 6), torch.randn(C)
    code = fd.cuda_code_for([x, y, weight])
    assert "runs on the ATen reference evaluator" not in code
    assert compile_kernels(code) == 2
    first, second = fd.execute([x, y, weight])
    assert_close(first, x.sum((0, 2, 3)) * weight)
    assert_close(second, (x * y).sum((0, 2, 3)) * weight)


def test_a_squeeze_whose_rank_could_stand_for_two_axis_sets_is_not_guessed():
    # [N, C, 1] reduced over N: kept axes (C, 1) and the dense axes (N, C)
    # both have rank 2; a rank-2 output of the dense axes would be written
    # with the wrong strides if taken for the kept ones. It must still
    # compute what torch does.
    with FusionDefinition() as fd:
        t = fd.define_tensor([N, C, 1], contiguity=[True, True, None])
        total = fd.ops.sum(t, [0])
        fd.add_output(total)
        fd.add_output(fd.ops.squeeze(fd.ops.mul(t, 2.0), [2]))
    x = torch.randn(N, C, 1)
    total, doubled = fd.execute([x])
    assert_close(total, x.sum(0))
    assert_close(doubled, x[:, :, 0] * 2.0)


# --- on the GPU ----------------------------------------------------------


def _launches(run):
    """Kernel and memcpy launches of `run()` on the GPU, by name."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        run()
        torch.cuda.synchronize()
    return [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]


@pytest.mark.gpu
def test_running_statistics_are_written_in_place_by_the_reduction_kernel():
    fd = _second_stage_with_running_mean()
    partials = torch.randn(N, C, 1, 1, device="cuda")
    running = torch.randn(C, device="cuda")
    for _ in range(3):  # compiles, then zeroes the split's counters once
        fd.execute([partials, running.clone()])
    before = running.clone()
    names = _launches(lambda: fd.execute([partials, running]))
    # The one kernel, and no copy into the buffer after it (the GPU tests'
    # NVFUSE_POISON_OUTPUTS=1 adds a fill of the fresh mean output).
    assert [n for n in names if n.startswith("nvfuse_")] == ["nvfuse_reduction_outer"], names
    assert not any("Memcpy" in n or "copy" in n.lower() for n in names), names
    mean = partials.sum(0).reshape(C) / N
    torch.testing.assert_close(running, mean * 0.1 + before * 0.9)


@pytest.mark.gpu
@pytest.mark.parametrize("channels", [8, 64, 2048])
def test_batch_norm_training_updates_running_statistics_on_the_gpu(channels):
    # The whole path: the backend's graph, its two-stage statistics and the
    # in-place updates, against eager's running statistics and outputs.
    import nvfuse.dynamo  # noqa: F401 (registers the backend)

    torch.manual_seed(0)
    eager = torch.nn.Sequential(torch.nn.BatchNorm2d(channels), torch.nn.ReLU()).cuda()
    compiled_module = torch.nn.Sequential(torch.nn.BatchNorm2d(channels), torch.nn.ReLU()).cuda()
    compiled_module.load_state_dict(eager.state_dict())
    compiled = torch.compile(compiled_module, backend="nvfuse")
    for _ in range(3):
        x = torch.randn(16, channels, 7, 9, device="cuda", requires_grad=True)
        x_eager = x.detach().clone().requires_grad_()
        out = compiled(x)
        want = eager(x_eager)
        torch.testing.assert_close(out, want, rtol=1e-4, atol=1e-4)
        out.square().sum().backward()
        want.square().sum().backward()
        torch.testing.assert_close(x.grad, x_eager.grad, rtol=1e-3, atol=1e-3)
    bn, bn_eager = compiled_module[0], eager[0]
    torch.testing.assert_close(bn.running_mean, bn_eager.running_mean, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(bn.running_var, bn_eager.running_var, rtol=1e-5, atol=1e-6)
    assert bn.num_batches_tracked.item() == 3
    torch.testing.assert_close(bn.weight.grad, bn_eager.weight.grad, rtol=1e-3, atol=1e-3)


CHANNELS_LAST = [3, 0, 2, 1]  # NCHW axes' stride ranks for NHWC memory


def _normalize_relu(stride_order):
    """Batch norm's training forward in one definition: statistics over N,
    H and W, then the normalized, rectified values, laid out as the input."""
    with FusionDefinition() as fd:
        x = fd.define_tensor(
            [-1, -1, -1, -1],
            contiguity=True,
            dtype=torch.bfloat16,
            stride_order=stride_order,
        )
        xf = fd.ops.cast(x, torch.float32)
        var, mean = fd.ops.var_mean(xf, [0, 2, 3], correction=0, keepdim=True)
        y = fd.ops.mul(fd.ops.sub(xf, mean), fd.ops.rsqrt(fd.ops.add(var, 1e-5)))
        fd.add_output(fd.ops.cast(fd.ops.relu(y), torch.bfloat16), stride_order=stride_order)
    return fd


def _channels_last_input(device):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(N, 16, 6, 5, generator=g).to(torch.bfloat16)
    return x.to(device=device, memory_format=torch.channels_last)


def _batch_norm_relu(x):
    return torch.relu(torch.nn.functional.batch_norm(x.float(), None, None, training=True))


def test_channels_last_normalization_takes_the_statistics_then_a_pointwise_kernel():
    # Channels innermost: a row walk of each channel would stride by C
    # elements; the statistics alone walk columns, the rest is pointwise.
    fd = _normalize_relu(CHANNELS_LAST)
    x = _channels_last_input("cpu")
    (out,) = fd.execute([x])
    assert [ops[:2] for _, ops in fd.segment_summary()] == [
        ["cast", "var_mean"],
        ["cast", "broadcast"],
    ]
    assert out.is_contiguous(memory_format=torch.channels_last)
    assert_close(out, _batch_norm_relu(x).to(torch.bfloat16))
    assert compile_kernels(fd.cuda_code_for([x])) == 2
    # Laid out row-major, the reduced W axis is innermost: one kernel.
    assert len(_normalize_relu([3, 2, 1, 0]).segment_summary()) == 1


@pytest.mark.gpu
def test_channels_last_normalization_reduces_columns_on_the_gpu():
    fd = _normalize_relu(CHANNELS_LAST)
    x = _channels_last_input("cuda")
    fd.execute([x])
    names = _launches(lambda: fd.execute([x]))
    kernels = [n for n in names if n.startswith("nvfuse_")]
    assert kernels[0].startswith("nvfuse_reduction_outer") and len(kernels) == 2, names
    (out,) = fd.execute([x])
    assert_close(out, _batch_norm_relu(x).to(torch.bfloat16))


@pytest.mark.gpu
def test_channels_last_batch_norm_trains_through_the_backend_on_the_gpu():
    # The backend's channels_last option: convolutions make NHWC tensors,
    # and batch norm's forward and backward regions reduce them as they are.
    import nvfuse.dynamo  # noqa: F401 (registers the backend)

    torch.manual_seed(0)

    def make():
        return torch.nn.Sequential(
            torch.nn.Conv2d(8, 32, 3, padding=1), torch.nn.BatchNorm2d(32), torch.nn.ReLU()
        ).cuda()

    eager, module = make(), make()
    module.load_state_dict(eager.state_dict())
    compiled = torch.compile(module, backend="nvfuse", options={"channels_last": True})
    # cuDNN runs float32 convolutions in TF32 by default, with other
    # algorithms in the two layouts: the weight's gradient, a sum over
    # 1,920 products, then differed by up to 0.19 between them. In float32
    # it differs by 3e-4, and what is compared is nvfuse's regions.
    with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
        for _ in range(2):
            x = torch.randn(16, 8, 12, 10, device="cuda", requires_grad=True)
            x_eager = x.detach().clone().requires_grad_()
            out, want = compiled(x), eager(x_eager)
            torch.testing.assert_close(out, want, rtol=1e-2, atol=1e-2)
            out.square().sum().backward()
            want.square().sum().backward()
            torch.testing.assert_close(x.grad, x_eager.grad, rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(module[0].weight.grad, eager[0].weight.grad, rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(module[1].running_var, eager[1].running_var, rtol=1e-4, atol=1e-5)


def test_a_gradient_expanded_from_pooled_values_does_not_hide_the_channels_last_layout():
    # The last batch norm's backward in a channels-last ResNet reads the
    # pooling's gradient expanded over H and W (strides [C, 1, 0, 0]): its
    # expanded axes have no memory, so the channels-last input says which
    # axis is innermost, and the per-element dx is not walked as rows.
    with FusionDefinition() as fd:
        g = fd.define_tensor(
            [-1, -1, -1, -1], contiguity=[True, True, None, None], dtype=torch.bfloat16
        )
        x = fd.define_tensor(
            [-1, -1, -1, -1], contiguity=True, dtype=torch.bfloat16, stride_order=CHANNELS_LAST
        )
        gf, xf = fd.ops.cast(g, torch.float32), fd.ops.cast(x, torch.float32)
        s1 = fd.ops.sum(gf, [0, 2, 3], keepdim=True)
        s2 = fd.ops.sum(fd.ops.mul(gf, xf), [0, 2, 3], keepdim=True)
        dx = fd.ops.sub(fd.ops.sub(gf, fd.ops.mul(s1, 0.01)), fd.ops.mul(xf, fd.ops.mul(s2, 0.01)))
        fd.add_output(fd.ops.cast(dx, torch.bfloat16), stride_order=CHANNELS_LAST)
    g = torch.randn(N, 16).to(torch.bfloat16)[:, :, None, None].expand(N, 16, 6, 5)
    x = _channels_last_input("cpu")
    (dx,) = fd.execute([g, x])
    segments = [ops for _, ops in fd.segment_summary()]
    assert all(not ("sum" in ops and "sub" in ops) for ops in segments), segments
    gf, xf = g.float(), x.float()
    s1, s2 = gf.sum([0, 2, 3], keepdim=True), (gf * xf).sum([0, 2, 3], keepdim=True)
    assert_close(dx, (gf - s1 * 0.01 - xf * (s2 * 0.01)).to(torch.bfloat16))


def _kernel_names(code):
    return re.findall(r"__global__ void (?:__launch_bounds__\([^)]*\) )?(\w+)\(", code)


def _pooled_gradient_statistics(out_order):
    """A channels-last batch norm backward's first half after a global
    average pool: the pool's gradient [N, C] expanded over H and W,
    masked by the ReLU, and the two per-channel sums, with the masked
    gradient and the centered input returned in `out_order`."""
    with FusionDefinition() as fd:
        g = fd.define_tensor(
            [-1, -1, -1, -1], contiguity=[True, True, None, None], dtype=torch.bfloat16
        )
        x = fd.define_tensor(
            [-1, -1, -1, -1], contiguity=True, dtype=torch.bfloat16, stride_order=CHANNELS_LAST
        )
        keep = fd.define_tensor(
            [-1, -1, -1, -1], contiguity=True, dtype=torch.bool, stride_order=CHANNELS_LAST
        )
        mean = fd.define_tensor([-1], contiguity=True, dtype=torch.float32)
        masked = fd.ops.where(keep, fd.ops.truediv(g, 30.0), 0.0)
        centered = fd.ops.sub(
            fd.ops.cast(x, torch.float32),
            fd.ops.broadcast_in_dim(mean, [x.size(0), x.size(1), x.size(2), x.size(3)], [1]),
        )
        fd.add_output(masked, stride_order=out_order)
        fd.add_output(centered, stride_order=out_order)
        fd.add_output(fd.ops.sum(masked, [0, 2, 3]))
        fd.add_output(fd.ops.sum(fd.ops.mul(masked, centered), [0, 2, 3]))
    g = torch.randn(N, 16).to(torch.bfloat16)[:, :, None, None].expand(N, 16, 6, 5)
    x = _channels_last_input("cpu")
    keep = (torch.randn(N, 16, 6, 5) > 0).to(memory_format=torch.channels_last)
    return fd, [g, x, keep, torch.randn(16)]


def test_an_input_expanded_along_some_reduced_axes_is_written_densely_first():
    # The reduced N, H and W are no one strided axis in the expanded
    # gradient: its reduction kernel declined every launch, and the segment
    # ran op by op on the reference evaluator. Now the masked gradient is
    # written first, laid out as the fusion's channels-last tensors.
    fd, inputs = _pooled_gradient_statistics(CHANNELS_LAST)
    names = _kernel_names(fd.cuda_code_for(inputs))
    fused = sum(kind == "fused" for kind, _ in fd.segment_summary())
    assert len(names) == fused, (names, fd.segment_summary())
    assert any(n.startswith("nvfuse_reduction_outer") for n in names), names
    assert not any("transpose" in n for n in names), names
    assert compile_kernels(fd.cuda_code_for(inputs)) == len(names)
    g, x, keep, mean = inputs
    masked = torch.where(keep, g / 30.0, 0.0)
    centered = x.float() - mean[None, :, None, None]
    outs = fd.execute(inputs)
    assert_close(outs[0], masked.to(torch.bfloat16))
    assert_close(outs[2], masked.float().sum([0, 2, 3]).to(torch.bfloat16))
    assert_close(outs[3], (masked.float() * centered).sum([0, 2, 3]))


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_a_gradient_broadcast_inside_the_fusion_is_written_densely_first(device):
    # The same pooled gradient reaching the fusion as [N, C], reshaped and
    # expanded over H and W inside it (a channels-last ResNet's last batch
    # norm backward): at stride 0 along H and W and in memory along N, so
    # not one strided walk either. Its reduction kernel declined every
    # launch (the reference evaluator ran it each training step).
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    with FusionDefinition() as fd:
        g = fd.define_tensor([-1, -1], contiguity=True, dtype=torch.bfloat16)
        x = fd.define_tensor(
            [-1, -1, -1, -1], contiguity=True, dtype=torch.bfloat16, stride_order=CHANNELS_LAST
        )
        keep = fd.define_tensor(
            [-1, -1, -1, -1], contiguity=True, dtype=torch.bool, stride_order=CHANNELS_LAST
        )
        n, c, h, w = x.size(0), x.size(1), x.size(2), x.size(3)
        spread = fd.ops.expand(fd.ops.reshape(g, [n, c, 1, 1]), [n, c, h, w])
        masked = fd.ops.where(keep, fd.ops.truediv(spread, 30.0), 0.0)
        gf = fd.ops.cast(masked, torch.float32)
        fd.add_output(fd.ops.sum(gf, [0, 2, 3]))
        fd.add_output(fd.ops.sum(fd.ops.mul(gf, fd.ops.cast(x, torch.float32)), [0, 2, 3]))
    g = torch.randn(N, 16, device=device).to(torch.bfloat16)
    x = _channels_last_input(device)
    keep = (torch.randn(N, 16, 6, 5, device=device) > 0).to(memory_format=torch.channels_last)
    code = fd.cuda_code_for([g, x, keep])
    assert "(runs on the ATen reference evaluator" not in code
    assert any(n.startswith("nvfuse_reduction") for n in _kernel_names(code))
    sums, products = fd.execute([g, x, keep])
    spread = (g[:, :, None, None] / 30.0).expand(x.shape)
    gf = torch.where(keep, spread, 0.0).float()
    assert_close(sums, gf.sum([0, 2, 3]))
    assert_close(products, (gf * x.float()).sum([0, 2, 3]))


def test_intermediates_between_segments_keep_the_fusions_layout():
    # Every tensor of the statistics' extents the fusion reads or returns is
    # channels-last, so the segments pass channels-last tensors: no kernel
    # transposes. Returned row-major, they disagree, and the intermediates
    # stay row-major (a transpose where the layouts meet).
    fd, inputs = _pooled_gradient_statistics(CHANNELS_LAST)
    assert not any("transpose" in n for n in _kernel_names(fd.cuda_code_for(inputs)))
    fd, inputs = _pooled_gradient_statistics([3, 2, 1, 0])
    assert any("transpose" in n for n in _kernel_names(fd.cuda_code_for(inputs)))
