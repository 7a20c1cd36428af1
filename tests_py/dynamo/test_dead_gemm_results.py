"""An elementwise chain that is a GEMM's or convolution's result's only
reader writes its own result into that result's memory
(passes/dead_gemm_results.py); nothing else changes."""

import pytest
import torch
import torch.nn.functional as F

import nvfuse.dynamo
from nvfuse.dynamo.passes.dead_gemm_results import write_into_dead_gemm_results

from .conftest import aten_graph, fused_regions


def _writes(gm):
    return [n for n in gm.graph.nodes if n.target is torch.ops.aten.copy_.default]


def _region_writes(regions):
    return sum("aten.copy_.default" in r.node_targets() for r in regions)


def _conv_bn_relu(x, w, scale, shift):
    """bf16 batch norm's inference shape: computed in float32, cast back."""
    y = F.conv2d(x, w, padding=1)
    return ((y.float() * scale + shift).relu().to(y.dtype),)


def _conv_inputs(dtype=torch.bfloat16, device="cpu"):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 4, 6, 6, generator=g).to(device, dtype)
    w = torch.randn(8, 4, 3, 3, generator=g).to(device, dtype)
    scale = torch.randn(1, 8, 1, 1, generator=g).to(device)
    shift = torch.randn(1, 8, 1, 1, generator=g).to(device)
    return x, w, scale, shift


def test_a_cast_chain_writes_the_convolution_result_it_reads():
    inputs = _conv_inputs()
    gm = aten_graph(_conv_bn_relu, *inputs)
    assert write_into_dead_gemm_results(gm) == 1
    (write,) = _writes(gm)
    assert write.args[0].target is torch.ops.aten.convolution.default
    assert write.args[1].meta["val"].dtype == torch.bfloat16  # the chain's last cast
    fused, regions = fused_regions(gm)
    assert _region_writes(regions) == 1 and not _writes(fused)
    torch.testing.assert_close(fused(*inputs)[0], _conv_bn_relu(*inputs)[0])


def _gemm_through_views(a, b, bias):
    """A GEMM read as [2, 3, N] (a linear over a batch) by a bias add and
    GELU."""
    y = (a @ b).view(2, 3, -1)
    return (F.gelu(y + bias),)


def test_a_gemm_read_through_its_views_is_written():
    g = torch.Generator().manual_seed(0)
    inputs = (torch.randn(6, 5, generator=g), torch.randn(5, 4, generator=g), torch.randn(4))
    gm = aten_graph(_gemm_through_views, *inputs)
    assert write_into_dead_gemm_results(gm) == 1
    fused, regions = fused_regions(gm)
    assert _region_writes(regions) == 1
    torch.testing.assert_close(fused(*inputs)[0], _gemm_through_views(*inputs)[0])


def _mlp_with_a_clone(x, w1, w2):
    """timm's MLP over channels-last rows: the GELU's result cloned (the
    same layout) before the second linear."""
    y = F.gelu((x @ w1).view(2, 3, -1).float()).to(x.dtype)
    return (y.clone().view(6, -1) @ w2,)


def test_a_clone_of_the_same_layout_ends_the_chain_that_writes():
    g = torch.Generator().manual_seed(0)
    inputs = [torch.randn(*s, generator=g).bfloat16() for s in ((6, 5), (5, 8), (8, 4))]
    gm = aten_graph(_mlp_with_a_clone, *inputs)
    assert write_into_dead_gemm_results(gm) >= 1
    written = [w.args[1] for w in _writes(gm)]
    assert torch.ops.aten.clone.default in [op.target for op in written]
    fused, regions = fused_regions(gm)
    assert _region_writes(regions) == 1
    torch.testing.assert_close(fused(*inputs)[0], _mlp_with_a_clone(*inputs)[0])


def _read_twice(a, b):
    y = a @ b
    return y.relu() + 1, y * 2


def test_a_result_two_elementwise_ops_read_takes_the_first_ones_result():
    g = torch.Generator().manual_seed(0)
    inputs = (torch.randn(6, 5, generator=g), torch.randn(5, 4, generator=g))
    gm = aten_graph(_read_twice, *inputs)
    assert write_into_dead_gemm_results(gm) == 1
    fused, regions = fused_regions(gm)
    assert _region_writes(regions) == 1
    for got, want in zip(fused(*inputs), _read_twice(*inputs)):
        torch.testing.assert_close(got, want)


def _read_by_a_reduction(a, b):
    y = a @ b
    return y.relu() + 1, y.sum(0)


def _also_returned(a, b):
    y = a @ b
    return y, y.relu()


def _other_dtype_only(a, b):
    return ((a @ b).double().exp(),)


def _transposed_result(a, b):
    return ((a @ b).t().contiguous().relu(),)


@pytest.mark.parametrize(
    "fn",
    [
        pytest.param(_read_by_a_reduction, id="read-by-a-reduction"),
        pytest.param(_also_returned, id="also-returned"),
        pytest.param(_other_dtype_only, id="no-op-of-its-dtype"),
        pytest.param(_transposed_result, id="copied-to-another-layout"),
    ],
)
def test_a_result_read_otherwise_is_not_written(fn):
    g = torch.Generator().manual_seed(0)
    gm = aten_graph(fn, torch.randn(6, 5, generator=g), torch.randn(5, 4, generator=g))
    assert write_into_dead_gemm_results(gm) == 0


def _into_a_reduction(a, b):
    y = (a @ b).relu()
    return y, y.sum(0)


def test_a_write_in_a_region_with_a_reduction_is_undone():
    """The region runs a reduction's kernel, which would write the value
    fresh and copy it in: the write is undone, the values are torch's."""
    g = torch.Generator().manual_seed(0)
    inputs = (torch.randn(6, 5, generator=g), torch.randn(5, 4, generator=g))
    gm = aten_graph(_into_a_reduction, *inputs)
    assert write_into_dead_gemm_results(gm) == 1
    fused, regions = fused_regions(gm)
    assert _region_writes(regions) == 0 and not _writes(fused)
    for got, want in zip(fused(*inputs), _into_a_reduction(*inputs)):
        torch.testing.assert_close(got, want)


def _read_before_and_after_another_gemm(a, b, w):
    y = a @ b
    return (y * 2 + y.relu() @ w,)


def test_a_write_whose_buffer_another_region_reads_is_undone():
    """relu(y) runs before the second GEMM, y * 2 + ... after it: writing
    relu(y) into y is safe only if both read y in the same kernel, so that
    write is undone and y * 2 reads y as it was. The sum is still written
    into the second GEMM's result, which only it reads."""
    g = torch.Generator().manual_seed(0)
    inputs = tuple(torch.randn(*shape, generator=g) for shape in ((6, 5), (5, 4), (4, 4)))
    gm = aten_graph(_read_before_and_after_another_gemm, *inputs)
    assert write_into_dead_gemm_results(gm) == 2
    first_gemm = next(n for n in gm.graph.nodes if n.target is torch.ops.aten.mm.default)
    assert any(
        w.args[0] is first_gemm and w.args[1].target is torch.ops.aten.relu.default
        for w in _writes(gm)
    )
    fused, regions = fused_regions(gm)
    assert _region_writes(regions) == 1 and not _writes(fused)
    want = _read_before_and_after_another_gemm(*inputs)[0]
    torch.testing.assert_close(fused(*inputs)[0], want)


class _Block(torch.nn.Module):
    """A residual block in inference: conv, batch norm, ReLU, conv, batch
    norm, the residual added, ReLU."""

    def __init__(self, channels=8):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(channels)
        self.conv2 = torch.nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(channels)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + x)


def _block(device, dtype):
    torch.manual_seed(0)
    block = _Block().to(device, dtype).eval()
    for bn in (block.bn1, block.bn2):  # statistics other than the identity's
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2.0)
    return block


def _writes_in_place(model, x):
    """Runs `model` compiled on `x` in inference against eager; returns how
    many writes into dead results its regions make."""
    nvfuse.dynamo.clear_reports()
    with torch.no_grad():
        got = torch.compile(model, backend="nvfuse")(x)
        want = model(x)
    torch.testing.assert_close(got, want)
    (report,) = nvfuse.dynamo.reports()
    return str(report).count("aten.copy_.default")


def test_an_inference_block_writes_its_convolutions_results_and_matches_eager():
    assert _writes_in_place(_block("cpu", torch.float32), torch.randn(2, 8, 6, 6)) == 2


def test_blocks_along_a_residual_stream_each_write_their_own_convolutions():
    """A block's output feeds the next block's residual add too, so the
    elementwise ops reading a convolution's result run down the stream:
    each convolution's result still takes its own block's values."""
    blocks = torch.nn.Sequential(_block("cpu", torch.float32), _block("cpu", torch.float32))
    assert _writes_in_place(blocks.eval(), torch.randn(2, 8, 6, 6)) == 4


def _check_one_activation_at_the_peak(step, x):
    """Runs `step` compiled on `x` (CUDA, bf16) under no_grad: its second
    call allocates less than one and a half activations of x's size at
    its peak, and its result is near eager's. Returns the result."""
    activation = x.numel() * x.element_size()
    compiled = torch.compile(step, backend="nvfuse")
    with torch.no_grad():
        compiled(x)  # compiles, and cuBLAS makes its workspace
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        got = compiled(x)
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated() - base
        want = step(x)
    assert peak < 1.5 * activation, (peak, activation)
    scale = want.float().abs().max().item()
    assert (got.float() - want.float()).abs().max().item() <= 2e-2 * scale
    return got


@pytest.mark.gpu
def test_a_cuda_linear_and_its_epilogue_hold_one_activation_at_their_peak():
    """bf16 on CUDA, 16 MB activations: GELU of a linear plus its input
    is written over the linear's result, so the step allocates one
    activation, not two."""
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    torch.manual_seed(0)
    linear = torch.nn.Linear(1024, 1024).to("cuda", torch.bfloat16)

    def step(x):
        return F.gelu(linear(x)) + x

    x = torch.randn(8192, 1024, device="cuda", dtype=torch.bfloat16)
    _check_one_activation_at_the_peak(step, x)


@pytest.mark.gpu
def test_a_cuda_channels_last_block_is_written_over_its_convolutions_result():
    """bf16 channels-last on CUDA: a 1x1 convolution (a GEMM read through
    its channels-last view), batch norm, the residual and ReLU. The block's
    output is written over the convolution's result in its own layout, so
    the step allocates one activation, not two (a layout the kernel could
    not write in place would cost a fresh output and a copy)."""
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(64, 64, 1, bias=False)
    bn = torch.nn.BatchNorm2d(64)
    model = torch.nn.Sequential(conv, bn).to("cuda", torch.bfloat16).eval()
    bn.running_mean.uniform_(-0.5, 0.5)
    bn.running_var.uniform_(0.5, 2.0)

    def step(x):
        return F.relu(model(x) + x)

    x = torch.randn(64, 64, 56, 56, device="cuda", dtype=torch.bfloat16)
    got = _check_one_activation_at_the_peak(step, x.to(memory_format=torch.channels_last))
    assert got.is_contiguous(memory_format=torch.channels_last)
