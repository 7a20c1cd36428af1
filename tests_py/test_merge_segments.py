"""Fusions that no scheduler takes whole are split into the groups that one
generated kernel each takes (segment/merge_groups.h), not sent whole to the
ATen reference evaluator: a sum of a sum, a row sum plus a column sum, a
layer-norm variance summed over rows, a complex-valued middle. Decisions are
asserted without a GPU (segment counts, generated code compiled by NVRTC,
results on the CPU reference path); the GPU tests run the kernels."""

import time

import pytest
import torch

from nvfuse import _C, DataType, FusionDefinition
from fusion_helpers import assert_close

REFERENCE_NOTE = "runs on the ATen reference evaluator"


def kernel_parts(code):
    """The parts of generated code that are kernels (an inner-outer
    reduction brings its finishing kernel in the same part)."""
    return [
        part for part in code.split("// ==== nvfuse segment: fused ====\n") if "__global__" in part
    ]


def _define(body, ranks=(2,)):
    with FusionDefinition() as fd:
        inputs = [
            fd.define_tensor([-1] * rank, contiguity=True, dtype=DataType.Float) for rank in ranks
        ]
        for out in body(fd, *inputs):
            fd.add_output(out)
    return fd


def sum_of_sum(fd, t):
    return [fd.ops.sum(fd.ops.sum(t, [1]), [0])]


def row_plus_column(fd, t):
    rows = fd.ops.sum(t, [1], keepdim=True)
    columns = fd.ops.sum(t, [0], keepdim=True)
    return [fd.ops.add(rows, columns)]


def variance_summed_over_rows(fd, t):
    var, mean = fd.ops.var_mean(t, dims=[1], correction=0, keepdim=True)
    return [fd.ops.cast(t - mean, DataType.BFloat16), fd.ops.sum(var, [0])]


def complex_middle(fd, t):
    c = fd.ops.cast(fd.ops.mul(t, 2.0), DataType.ComplexFloat)
    return [fd.ops.add(fd.ops.real(fd.ops.mul(c, c)), 1.0)]


def torch_results(name, x):
    if name == "sum_of_sum":
        return [x.sum(1).sum(0)]
    if name == "row_plus_column":
        return [x.sum(1, keepdim=True) + x.sum(0, keepdim=True)]
    if name == "variance_summed_over_rows":
        var, mean = torch.var_mean(x, dim=1, correction=0, keepdim=True)
        return [(x - mean).to(torch.bfloat16), var.sum(0)]
    return [(x * 2) ** 2 + 1]


CASES = {
    # body, expected segment op lists, parts run as generated kernels
    "sum_of_sum": (sum_of_sum, [["sum"], ["sum"]], 2),
    # Both sums read x once in one kernel; the add writes the matrix.
    "row_plus_column": (row_plus_column, [["sum", "sum"], ["add"]], 2),
    "variance_summed_over_rows": (
        variance_summed_over_rows,
        [["var_mean", "sub", "cast"], ["sum"]],
        2,
    ),
    # The complex ops run on the reference evaluator between two kernels.
    "complex_middle": (complex_middle, [["mul"], ["cast", "mul", "real"], ["add"]], 2),
}


def _ops(fd):
    return [
        [op for op in ops if op not in ("broadcast", "expand")] for _, ops in fd.segment_summary()
    ]


@pytest.mark.parametrize("name", sorted(CASES))
def test_merge_segments_are_the_fewest_kernel_groups(name):
    body, expected, _ = CASES[name]
    assert _ops(_define(body)) == expected


@pytest.mark.parametrize("name", sorted(CASES))
def test_merge_segments_compile_with_nvrtc(name):
    body, _, kernels = CASES[name]
    code = _define(body).cuda_code_for([torch.randn(6, 10)])
    assert len(kernel_parts(code)) == kernels
    assert (REFERENCE_NOTE in code) == (name == "complex_middle")
    for part in kernel_parts(code):
        name_start = part.index("__global__ void ") + len("__global__ void ")
        kernel_name = part[name_start : part.index("(", name_start)]
        assert _C.nvrtc_compile(part, kernel_name, 90)["bytes"] > 0


@pytest.mark.parametrize("name", sorted(CASES))
def test_merge_segments_match_torch_on_the_cpu(name):
    body, _, _ = CASES[name]
    x = torch.randn(6, 10)
    for out, want in zip(_define(body).execute([x]), torch_results(name, x)):
        assert_close(out, want)


def test_an_unschedulable_whole_of_one_expr_stays_one_segment():
    # Nothing to split: the reason for the reference evaluator is kept.
    fd = _define(lambda fd, t: [fd.ops.real(fd.ops.cast(t, DataType.ComplexFloat))])
    assert len(fd.segment_summary()) == 1
    with pytest.raises(Exception, match="reference evaluator"):
        fd.cuda_code_for([torch.randn(2, 3)])


def test_a_chain_of_40_reductions_over_alternating_axes_segments_in_under_a_second():
    # Each reduction reduces the other axis of the one before: a column sum
    # of rows shifted by their sums is one inner-outer kernel, so pairs
    # share a kernel, and every part is a generated kernel. The greedy
    # merge asks the schedulers a bounded number of times per expr
    # (measured ~0.03 s on a 2-core machine).
    def body(fd, t):
        y = t
        for i in range(40):
            y = fd.ops.add(fd.ops.mul(fd.ops.sum(y, [i % 2], keepdim=True), 0.1), t)
        return [y]

    start = time.perf_counter()
    fd = _define(body)
    summary = fd.segment_summary()
    seconds = time.perf_counter() - start
    assert len(summary) == 21
    assert seconds < 1.0, seconds
    assert REFERENCE_NOTE not in fd.cuda_code_for([torch.randn(6, 10)])
    x = torch.randn(6, 10)
    want = x
    for i in range(40):
        want = want.sum(i % 2, keepdim=True) * 0.1 + x
    (out,) = fd.execute([x])
    torch.testing.assert_close(out, want, rtol=1e-4, atol=1e-4)


def _normalize_by_statistics_of_partials():
    """Batch norm's statistics reduced from [N, C] partials (as
    split_reductions leaves them), applied to the [N, C, H, W] activation."""
    with FusionDefinition() as fd:
        partials = fd.define_tensor([4, 3], contiguity=True, dtype=DataType.Float)
        x = fd.define_tensor([4, 3, 5, 6], contiguity=True, dtype=DataType.Float)
        wide = fd.ops.broadcast_in_dim(partials, [4, 3, 1, 1], [0, 1])
        var, mean = fd.ops.var_mean(wide, dims=[0], correction=0, keepdim=True)
        fd.add_output(fd.ops.mul(fd.ops.sub(x, mean), fd.ops.rsqrt(fd.ops.add(var, 1e-5))))
    return fd


def test_statistics_applied_to_a_tensor_wider_than_the_reduced_one_get_their_own_kernel():
    # One reduction kernel walks the partials' [4, 3, 1, 1]; with the
    # normalization of the [4, 3, 5, 6] tensor in it, it declined every
    # call and the whole ran on the reference evaluator.
    fd = _normalize_by_statistics_of_partials()
    kinds = [kind for kind, _ in fd.segment_summary()]
    assert len(kinds) == 2 and "var_mean" in fd.segment_summary()[0][1]
    code = fd.cuda_code_for([torch.randn(4, 3), torch.randn(4, 3, 5, 6)])
    assert len(kernel_parts(code)) == 2 and REFERENCE_NOTE not in code
    partials, x = torch.randn(4, 3), torch.randn(4, 3, 5, 6)
    var, mean = torch.var_mean(partials[:, :, None, None], dim=0, correction=0, keepdim=True)
    (out,) = fd.execute([partials, x])
    assert_close(out, (x - mean) * torch.rsqrt(var + 1e-5))


def _centered_by_a_sum_of_sums():
    """A bf16 input widened once, read by a row-sum kernel and by the
    pointwise kernel after the column sum of those sums."""
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True, dtype=DataType.BFloat16)
        wide = fd.ops.cast(x, DataType.Float)
        total = fd.ops.sum(fd.ops.sum(wide, [1], keepdim=True), [0], keepdim=True)
        fd.add_output(fd.ops.sub(wide, total))
    return fd


def test_a_cast_of_an_input_is_recomputed_by_each_kernel_that_reads_it():
    # Written by the first kernel and read back by the last, the float copy
    # cost twice the bf16 input's bytes each way.
    fd = _centered_by_a_sum_of_sums()
    assert _ops(fd) == [["cast", "sum"], ["sum"], ["cast", "sub"]]
    x = torch.randn(6, 10, dtype=torch.bfloat16)
    code = fd.cuda_code_for([x])
    first, _, last = kernel_parts(code)
    assert "const nvfuse::BFloat16*" in first and "const nvfuse::BFloat16*" in last
    assert first.count("float* t") == 1  # the row sums: no float copy of x
    wide = x.float()
    (out,) = fd.execute([x])
    assert_close(out, wide - wide.sum(1, keepdim=True).sum(0, keepdim=True))


def _batch_norm_backward(shape=(4, 16, 6, 6)):
    """Channels-last batch norm + ReLU backward as the backend defines it:
    two per-channel sums of float work on the bf16 inputs, then the
    gradient of the activation from both."""
    c = shape[1]
    count = shape[0] * shape[2] * shape[3]
    with FusionDefinition() as fd:
        x, mask, grad = (
            fd.define_tensor(list(shape), contiguity=True, dtype=dtype, stride_order=[3, 0, 2, 1])
            for dtype in (DataType.BFloat16, DataType.Bool, DataType.BFloat16)
        )
        mean, invstd, weight = (
            fd.define_tensor([c], contiguity=True, dtype=DataType.Float) for _ in range(3)
        )

        def per_channel(t):
            return fd.ops.broadcast_in_dim(t, list(shape), [1])

        g = fd.ops.cast(fd.ops.where(mask, 0.0, grad), DataType.Float)
        centred = fd.ops.sub(fd.ops.cast(x, DataType.Float), per_channel(mean))
        grad_sum = fd.ops.sum(g, [0, 2, 3])
        dot = fd.ops.sum(fd.ops.mul(g, centred), [0, 2, 3])
        scale = fd.ops.mul(fd.ops.mul(dot, 1.0 / count), fd.ops.mul(invstd, invstd))
        dx = fd.ops.sub(
            fd.ops.sub(g, fd.ops.mul(centred, per_channel(scale))),
            per_channel(fd.ops.mul(grad_sum, 1.0 / count)),
        )
        dx = fd.ops.mul(dx, per_channel(fd.ops.mul(invstd, weight)))
        fd.add_output(grad_sum)
        fd.add_output(dot)
        fd.add_output(fd.ops.cast(dx, DataType.BFloat16))
    return fd


def _batch_norm_backward_inputs(shape=(4, 16, 6, 6), device="cpu"):
    c = shape[1]

    def activation(t):
        return t.to(device).to(memory_format=torch.channels_last)

    x = activation(torch.randn(shape, dtype=torch.bfloat16))
    mask = activation(torch.rand(shape) < 0.3)
    grad = activation(torch.randn(shape, dtype=torch.bfloat16))
    mean = x.float().mean((0, 2, 3))
    invstd = torch.rsqrt(x.float().var((0, 2, 3), correction=0) + 1e-5)
    return [x, mask, grad, mean, invstd, torch.randn(c, device=device)]


def _batch_norm_backward_torch(x, mask, grad, mean, invstd, weight):
    count = x.numel() // x.shape[1]
    g = grad.masked_fill(mask, 0).float()
    centred = x.float() - mean[:, None, None]
    grad_sum, dot = g.sum((0, 2, 3)), (g * centred).sum((0, 2, 3))
    scale = (dot / count * invstd * invstd)[:, None, None]
    dx = (g - centred * scale - (grad_sum / count)[:, None, None]) * (invstd * weight)[
        :, None, None
    ]
    return grad_sum, dot, dx.to(torch.bfloat16)


def test_elementwise_work_on_inputs_is_recomputed_by_the_kernel_after_the_sums():
    # The reduction kernel wrote the float gradient and the float centred
    # activation and the last kernel read both back: 16 bytes an element
    # where the bf16 inputs and the mask take 5.
    fd = _batch_norm_backward()
    args = _batch_norm_backward_inputs()
    segments = fd.segment(args)
    assert len(segments) == 2
    activations = [
        line for line in str(segments[-1]).splitlines() if "shape=[-1, -1, -1, -1]" in line
    ]
    assert len(activations) == 3 and not any("DataType.Float" in line for line in activations)
    for got, want in zip(fd.execute(args), _batch_norm_backward_torch(*args)):
        torch.testing.assert_close(got.float(), want.float(), rtol=2e-2, atol=2e-2)


def test_elementwise_work_on_more_bytes_than_its_result_is_read_not_recomputed():
    # A float sum of three float inputs read after a reduction: recomputed,
    # the last kernel would read 12 bytes an element where the written sum
    # takes 4 to write and 4 to read.
    with FusionDefinition() as fd:
        a, b, c = (fd.define_tensor([-1, -1], contiguity=True, dtype=DataType.Float) for _ in "abc")
        wide = fd.ops.add(fd.ops.add(a, b), c)
        total = fd.ops.sum(fd.ops.sum(wide, [1], keepdim=True), [0], keepdim=True)
        fd.add_output(fd.ops.sub(wide, total))
    args = [torch.randn(6, 10) for _ in "abc"]
    segments = fd.segment(args)
    assert ("segment", 0, 0) in segments[-1].segment_inputs
    assert not any(source[0] == "input" for source in segments[-1].segment_inputs)
    wide = args[0] + args[1] + args[2]
    (out,) = fd.execute(args)
    assert_close(out, wide - wide.sum(1, keepdim=True).sum(0, keepdim=True))


# --- on the GPU ----------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(CASES))
def test_merge_segments_match_torch_on_the_gpu(name):
    body, _, kernels = CASES[name]
    fd = _define(body)
    x = torch.randn(1000, 700, device="cuda")
    for out, want in zip(fd.execute([x]), torch_results(name, x)):
        # A bfloat16 output may round one ulp (2**-7 relative) the other
        # way: its float value differs from torch's in the last bits.
        rtol = 2**-7 if out.dtype == torch.bfloat16 else 1e-4
        torch.testing.assert_close(out, want, rtol=rtol, atol=1e-2)
    assert len(kernel_parts(fd.last_cuda_code())) == kernels


@pytest.mark.gpu
def test_statistics_applied_to_a_wider_tensor_run_as_kernels_on_the_gpu():
    import nvfuse

    fd = _normalize_by_statistics_of_partials()
    partials, x = torch.randn(4, 3, device="cuda"), torch.randn(4, 3, 5, 6, device="cuda")
    fd.execute([partials, x])  # the first call runs on ATen while the kernels compile
    nvfuse.set_dump("launch")
    try:
        (out,) = fd.execute([partials, x], capture_debug_output=True)
    finally:
        nvfuse.set_dump("")
    assert "declined" not in (fd.debug_output() or "")
    var, mean = torch.var_mean(partials[:, :, None, None], dim=0, correction=0, keepdim=True)
    torch.testing.assert_close(out, (x - mean) * torch.rsqrt(var + 1e-5))


@pytest.mark.gpu
def test_batch_norm_backward_recomputing_its_input_work_matches_torch_on_the_gpu():
    import nvfuse

    shape = (8, 64, 14, 14)
    fd = _batch_norm_backward(shape)
    args = _batch_norm_backward_inputs(shape, "cuda")
    fd.execute(args)  # the first call may run on ATen while the kernels compile
    nvfuse.set_dump("launch")
    try:
        outputs = fd.execute(args, capture_debug_output=True)
    finally:
        nvfuse.set_dump("")
    assert "declined" not in (fd.debug_output() or "")
    assert len(kernel_parts(fd.last_cuda_code())) == 2
    for got, want in zip(outputs, _batch_norm_backward_torch(*args)):
        torch.testing.assert_close(got.float(), want.float(), rtol=2e-2, atol=5e-2)


def _matmul_and_counters(counters):
    """A matmul and its epilogue, then an in-place update of each of
    `counters` 0-d counters (a model's batch-norm batch counters at the
    forward's end): the matmul cuts the fusion, and nothing connects the
    counters to each other."""
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True, dtype=DataType.Float)
        w = fd.define_tensor([-1, -1], contiguity=True, dtype=DataType.Float)
        fd.add_output(fd.ops.relu(fd.ops.matmul(x, w)))
        for _ in range(counters):
            count = fd.define_tensor([], dtype=DataType.Int)
            fd.add_output(fd.ops.add(count, 1), alias_input=count)
    return fd


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_independent_counter_updates_share_one_kernel(device):
    fd = _matmul_and_counters(6)
    summary = fd.segment_summary()
    assert [ops for _, ops in summary if "add" in ops] == [["add"] * 6]  # one launch, not six
    assert [kind for kind, _ in summary] == ["fused", "aten", "fused"]
    x, w = torch.randn(5, 7, device=device), torch.randn(7, 3, device=device)
    counts = [torch.tensor(k, device=device) for k in range(6)]
    (out,) = fd.execute([x, w] + counts)
    assert_close(out, (x @ w).relu())
    assert [c.item() for c in counts] == list(range(1, 7))


@pytest.mark.gpu
def test_a_cut_fusion_writes_its_in_place_updates_without_copies():
    """The counters' kernel writes each counter itself
    (segment/segment_builder.h): no copy into them follows the call."""
    from torch.profiler import ProfilerActivity, profile

    fd = _matmul_and_counters(6)
    x, w = torch.randn(5, 7, device="cuda"), torch.randn(7, 3, device="cuda")
    counts = [torch.tensor(k, device="cuda") for k in range(6)]
    fd.execute([x, w] + counts)  # compiles
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fd.execute([x, w] + counts)
        torch.cuda.synchronize()
    names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    assert not [n for n in names if "copy" in n.lower() or "memcpy" in n.lower()], names
    assert [c.item() for c in counts] == list(range(2, 8))
