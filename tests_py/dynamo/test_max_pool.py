"""2-D max pooling as strided slices of the padded input
(passes/max_pool_slices.py): values and indices as ATen's, special values
and both layouts included; the cases it leaves to ATen; a ResNet stem's
batch norm, ReLU and pooling as one kernel in inference; gradients
through ATen's pooling backward."""

import pytest
import torch

import nvfuse.dynamo  # noqa: F401 (registers the backend)
from nvfuse.dynamo.passes.max_pool_slices import pool_window, rewrite_max_pools

from .conftest import aten_graph, fused_regions, record_definitions

aten = torch.ops.aten


def max_pool2d_with_indices(*args):
    """The pass's ops run eagerly."""
    pooled = pool_window(*args, call=lambda target, *a, **k: target(*a, **k))
    return NotImplemented if pooled is None else pooled


# (input shape, kernel, stride, padding, dilation)
CONFIGS = [
    ((2, 3, 9, 11), [3, 3], [2, 2], [1, 1], [1, 1]),  # a ResNet stem's
    ((2, 4, 8, 8), [2, 2], [2, 2], [0, 0], [1, 1]),
    ((1, 2, 7, 7), [3, 3], [1, 1], [1, 1], [1, 1]),
    ((1, 2, 10, 9), [3, 3], [2, 2], [1, 1], [2, 2]),
    ((1, 1, 5, 6), [2, 3], [1, 2], [1, 1], [1, 1]),
    ((2, 3, 6, 6), [3, 3], [], [0, 0], [1, 1]),  # stride defaults to the kernel
]


def _with_special_values(shape, dtype):
    """Random values with -inf rows, NaNs (two in one window) and ties."""
    x = torch.randn(shape)
    x[0, 0, 0, :3] = float("-inf")
    x[0, 0, 1, 1] = float("nan")
    x[-1, -1, 2, 2] = float("nan")
    x[-1, -1, 3, 3] = float("nan")
    x[0, -1, 4, :] = 0.5
    return x.to(dtype)


def _same(got, want):
    values, indices = got
    want_values, want_indices = want
    assert torch.equal(values.isnan(), want_values.isnan())
    assert torch.equal(values.nan_to_num(7.0), want_values.nan_to_num(7.0))
    assert torch.equal(indices, want_indices)


@pytest.mark.parametrize("shape,kernel,stride,padding,dilation", CONFIGS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_decomposition_matches_aten(shape, kernel, stride, padding, dilation, dtype):
    x = _with_special_values(shape, dtype)
    want = aten.max_pool2d_with_indices(x, kernel, stride, padding, dilation)
    _same(max_pool2d_with_indices(x, kernel, stride, padding, dilation), want)
    channels_last = x.to(memory_format=torch.channels_last)
    _same(max_pool2d_with_indices(channels_last, kernel, stride, padding, dilation), want)


def _values_only(*args):
    values, indices = pool_window(
        *args, call=lambda target, *a, **k: target(*a, **k), indices=False
    )
    assert indices is None
    return values


@pytest.mark.parametrize("shape,kernel,stride,padding,dilation", CONFIGS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_values_without_indices_match_aten(shape, kernel, stride, padding, dilation, dtype):
    """The form the pass inserts: -inf padding and a NaN-propagating
    maximum give ATen's values, NaN, -inf and ties included."""
    x = _with_special_values(shape, dtype)
    want, _ = aten.max_pool2d_with_indices(x, kernel, stride, padding, dilation)
    for layout in (torch.contiguous_format, torch.channels_last):
        got = _values_only(x.to(memory_format=layout), kernel, stride, padding, dilation)
        assert torch.equal(got.isnan(), want.isnan())
        assert torch.equal(got.nan_to_num(7.0), want.nan_to_num(7.0))


def test_rewrite_computes_no_positions():
    """Nothing reads an inference step's indices: the pass inserts no
    index arithmetic or select for them."""
    x = torch.randn(1, 2, 7, 7).to(memory_format=torch.channels_last)
    with torch.no_grad():
        gm = aten_graph(lambda t: torch.nn.functional.max_pool2d(t, 3, 2, 1), x)
    assert rewrite_max_pools(gm) == 1
    targets = {n.target for n in gm.graph.nodes if n.op == "call_function"}
    assert aten.maximum.default in targets
    assert not targets & {
        aten.where.self,
        aten.arange.start_step,
        aten.max_pool2d_with_indices.default,
    }


def _pool_of_relu(x):
    return torch.nn.functional.max_pool2d(torch.relu(x), 3, 2, 1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_relu_read_only_by_the_pool_moves_after_it(dtype):
    """max over a window of relus = relu of the max: the pool reads the
    relu's input and one relu follows it, with ATen's values (-0.0 and
    NaN included)."""
    x = _with_special_values((2, 3, 9, 11), dtype).to(memory_format=torch.channels_last)
    x[1, 0, :4, :4] = -0.0
    with torch.no_grad():
        gm = aten_graph(_pool_of_relu, x)
    assert rewrite_max_pools(gm) == 1
    order = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert order.count(aten.relu.default) == 1
    assert order.index(aten.relu.default) > order.index(aten.maximum.default)
    got, want = gm(x), _pool_of_relu(x)
    got = got[0] if isinstance(got, (tuple, list)) else got
    assert torch.equal(got.isnan(), want.isnan())
    same_bits = got.nan_to_num(7.0).view(torch.int16 if dtype == torch.bfloat16 else torch.int32)
    want_bits = want.nan_to_num(7.0).view(same_bits.dtype)
    assert torch.equal(same_bits, want_bits)  # +0.0, not -0.0, where the window is all <= 0


def test_relu_read_elsewhere_stays_before_the_pool():
    def both(x):
        y = torch.relu(x)
        return torch.nn.functional.max_pool2d(y, 3, 2, 1), y * 2

    x = torch.randn(1, 2, 7, 7)
    with torch.no_grad():
        gm = aten_graph(both, x)
    assert rewrite_max_pools(gm) == 1
    order = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert order.index(aten.relu.default) < order.index(aten.maximum.default)


def test_window_of_minus_infinity_indexes_its_first_element_inside_the_input():
    """ATen starts each window at -inf and its first position inside the
    input, not in the padding."""
    x = torch.full((1, 1, 4, 4), float("-inf"))
    want = aten.max_pool2d_with_indices(x, [3, 3], [2, 2], [1, 1])
    got = max_pool2d_with_indices(x, [3, 3], [2, 2], [1, 1])
    _same(got, want)
    assert got[1][0, 0, 0, 0].item() == 0


def test_ceil_mode_and_unbatched_inputs_stay_aten():
    x = torch.randn(1, 2, 7, 7)
    assert max_pool2d_with_indices(x, [3, 3], [2, 2], [1, 1], [1, 1], True) is NotImplemented
    assert max_pool2d_with_indices(x[0], [3, 3], [2, 2], [1, 1]) is NotImplemented
    gm = aten_graph(lambda t: torch.nn.functional.max_pool2d(t, 3, 2, 1, ceil_mode=True), x)
    assert rewrite_max_pools(gm) == 0
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert aten.max_pool2d_with_indices.default in targets


def test_pooling_whose_indices_are_read_stays_aten():
    """A training step's backward reads the indices: ATen's pooling writes
    them at less cost than the pass's kernels (see the pass)."""
    x = torch.randn(1, 2, 7, 7)
    gm = aten_graph(lambda t: torch.nn.functional.max_pool2d(t, 3, 2, 1, return_indices=True), x)
    assert rewrite_max_pools(gm) == 0


class Stem(torch.nn.Module):
    """A ResNet stem after its convolution: batch norm, ReLU, max pool."""

    def __init__(self, channels=8):
        super().__init__()
        self.bn = torch.nn.BatchNorm2d(channels)
        self.pool = torch.nn.MaxPool2d(3, 2, 1)

    def forward(self, x):
        return self.pool(torch.relu(self.bn(x)))


def test_inference_stem_is_one_kernel():
    """Under no_grad the indices are dead: batch norm, ReLU and the
    pooling are one coordinate kernel, which never writes the full-size
    activation."""

    def stem(x, weight, bias, mean, var):
        y = torch.nn.functional.batch_norm(x, mean, var, weight, bias, False)
        return torch.nn.functional.max_pool2d(torch.relu(y), 3, 2, 1)

    x = torch.randn(2, 8, 15, 15).bfloat16().to(memory_format=torch.channels_last)
    statistics = [torch.randn(8).bfloat16() for _ in range(3)] + [torch.rand(8).bfloat16() + 0.5]
    with torch.no_grad():
        gm = aten_graph(stem, x, *statistics)
        assert rewrite_max_pools(gm) == 1
        targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
        assert aten.max_pool2d_with_indices.default not in targets
        fused, regions = fused_regions(gm)
        seen = record_definitions(regions)
        got = fused(x, *statistics)
        want = stem(x, *statistics)
    assert len(regions) == 1
    fd, args = seen[0]
    kinds = [segment.segment_kind for segment in fd.segment(args)]
    assert len(kinds) == 1, kinds
    got = got[0] if isinstance(got, (tuple, list)) else got
    torch.testing.assert_close(got, want)


def test_training_stem_gradients_match_eager():
    torch.manual_seed(0)
    stem = Stem()
    reference = Stem()
    reference.load_state_dict(stem.state_dict())
    x = torch.randn(2, 8, 15, 15).to(memory_format=torch.channels_last)
    x_ref = x.clone().requires_grad_()
    x.requires_grad_()
    want = reference(x_ref)
    want.square().sum().backward()
    got = torch.compile(stem, backend="nvfuse")(x)
    got.square().sum().backward()
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(x.grad, x_ref.grad)
    torch.testing.assert_close(stem.bn.weight.grad, reference.bn.weight.grad)
    torch.testing.assert_close(stem.bn.running_var, reference.bn.running_var)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_cuda_pooling_matches_aten_values_and_indices(dtype):
    """The generated kernel against ATen's CUDA kernels, channels-last and
    not, special values included: selection is exact."""
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")

    def pool(t):
        return torch.nn.functional.max_pool2d(t, 3, 2, 1, return_indices=True)

    compiled = torch.compile(pool, backend="nvfuse")
    x = _with_special_values((4, 16, 33, 30), dtype).cuda()
    for layout in (torch.contiguous_format, torch.channels_last):
        t = x.to(memory_format=layout)
        _same(compiled(t), pool(t))


@pytest.mark.gpu
def test_cuda_stem_inference_and_training_near_eager():
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    torch.manual_seed(0)
    stem = Stem(16).cuda().bfloat16()
    reference = Stem(16).cuda().bfloat16()
    reference.load_state_dict(stem.state_dict())
    x = torch.randn(8, 16, 56, 56, device="cuda", dtype=torch.bfloat16)
    x = x.to(memory_format=torch.channels_last)
    compiled = torch.compile(stem, backend="nvfuse")
    x_ref = x.clone().requires_grad_()
    x.requires_grad_()
    got, want = compiled(x), reference(x_ref)
    got.float().square().sum().backward()
    want.float().square().sum().backward()
    for a, b in [
        (got, want),
        (x.grad, x_ref.grad),
        (stem.bn.weight.grad, reference.bn.weight.grad),
    ]:
        scale = b.float().abs().max().item()
        assert (a.float() - b.float()).abs().max().item() <= 2e-2 * scale + 1e-3
    stem.eval()
    reference.eval()
    with torch.no_grad():
        got, want = compiled(x), reference(x)
    scale = want.float().abs().max().item()
    assert (got.float() - want.float()).abs().max().item() <= 2e-2 * scale + 1e-3
