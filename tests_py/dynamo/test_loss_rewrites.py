"""Cross-entropy over upcast logits without the upcast copy: views move
above casts (passes/views_before_casts.py) and the label's gather moves
below the log-softmax's pointwise ops (passes/gather_through_pointwise.py),
so the region reads the logits once, in their own dtype."""

import contextlib
import re

import torch
import torch.nn.functional as F

from nvfuse.dynamo.passes.gather_through_pointwise import push_gathers_through_pointwise
from nvfuse.dynamo.passes.views_before_casts import move_views_before_casts
from nvfuse.dynamo.region import FusedRegion

from .conftest import aten_graph, fused_regions, record_definitions

aten = torch.ops.aten


def _hf_causal_loss(logits, labels):
    logits = logits.float()
    return F.cross_entropy(logits.view(-1, logits.shape[-1]), labels.view(-1), ignore_index=-100)


def _inputs(vocab=101):
    torch.manual_seed(0)
    logits = torch.randn(2, 6, vocab, dtype=torch.bfloat16)
    labels = torch.randint(0, vocab, (2, 6))
    labels[0, 0] = -100
    return logits, labels


@contextlib.contextmanager
def _kernels_per_region_call():
    """A list that fills, per region call (CPU tensors standing in for CUDA
    ones' layouts), with the names of the kernels its definition generates."""
    calls = []
    original = FusedRegion.forward

    def recording(self, *args):
        fd = self.definition_for(args)
        fd._ensure_defined()
        code = fd.cuda_code_for(list(args))
        calls.append(re.findall(r"void __launch_bounds__\(\d+\) (\w+)", code))
        return original(self, *args)

    FusedRegion.forward = recording
    try:
        yield calls
    finally:
        FusedRegion.forward = original


def test_the_view_moves_above_the_upcast():
    gm = aten_graph(_hf_causal_loss, *_inputs())
    assert move_views_before_casts(gm) == 1
    (cast,) = [
        n for n in gm.graph.nodes if n.target is aten._to_copy.default and n.meta["val"].dim() == 2
    ]
    assert cast.args[0].target is aten.view.default
    torch.testing.assert_close(gm(*_inputs()), _hf_causal_loss(*_inputs()))


def test_a_cast_read_twice_stays_where_it_is():
    def cast_read_twice(x):
        y = x.float()
        return y.view(-1), y.sum()

    gm = aten_graph(cast_read_twice, torch.randn(3, 4, dtype=torch.bfloat16))
    assert move_views_before_casts(gm) == 0


def _norm_then_cast_view(x, weight):
    # A layer norm's float32 output cast back to bf16 for the next GEMM,
    # which reads it as [tokens, width].
    y = F.layer_norm(x.float(), (x.shape[-1],), weight)
    return y.to(torch.bfloat16).view(-1, x.shape[-1])


def test_the_cast_of_a_computed_value_keeps_its_view_after_it():
    """Moved above the cast, the view would reshape the norm's result
    inside its region: the norm's kernel, then one for the cast alone."""
    args = torch.randn(2, 6, 64, dtype=torch.bfloat16), torch.randn(64)
    gm = aten_graph(_norm_then_cast_view, *args)
    assert move_views_before_casts(gm) == 0
    fused, regions = fused_regions(gm)
    seen = record_definitions(regions)
    torch.testing.assert_close(fused(*args), _norm_then_cast_view(*args))
    ((fd, _),) = seen
    assert [kind for kind, _ in fd.segment_summary()] == ["fused"], fd.segment_summary()


def test_the_label_gather_reads_the_logits_themselves():
    gm = aten_graph(_hf_causal_loss, *_inputs())
    move_views_before_casts(gm)
    assert push_gathers_through_pointwise(gm) == 1
    (gather,) = [n for n in gm.graph.nodes if n.target is aten.gather.default]
    assert gather.args[0].op == "placeholder"  # the bf16 logits
    torch.testing.assert_close(gm(*_inputs()), _hf_causal_loss(*_inputs()))


def test_a_gather_of_an_operand_broadcast_along_another_axis_stays():
    def gather_of_column_broadcast(x, column, index):
        return torch.gather(x * column, 1, index)

    x, column = torch.randn(4, 5), torch.randn(1, 5)
    index = torch.randint(0, 5, (4, 1))
    gm = aten_graph(gather_of_column_broadcast, x, column, index)
    assert push_gathers_through_pointwise(gm) == 0


def test_the_compiled_loss_runs_without_an_upcast_kernel():
    """CPU tensors stand in for CUDA ones' layouts: the loss region's
    kernels are its row reductions and small pointwise kernels, none of
    them writing an fp32 copy of the logits first."""
    with _kernels_per_region_call() as calls:
        got = torch.compile(_hf_causal_loss, backend="nvfuse")(*_inputs(4096))
    kernels = [name for call in calls for name in call]
    torch.testing.assert_close(got, _hf_causal_loss(*_inputs(4096)))
    # Without the rewrites a first pointwise kernel wrote the upcast logits.
    assert sum(k.startswith("nvfuse_pointwise") for k in kernels) == 1
    assert sum(k.startswith("nvfuse_reduction") for k in kernels) == 2


def test_the_loss_with_symbolic_sizes_compiles_and_matches():
    compiled = torch.compile(_hf_causal_loss, backend="nvfuse", dynamic=True)
    for tokens in (6, 9):
        torch.manual_seed(tokens)
        logits = torch.randn(2, tokens, 101, dtype=torch.bfloat16)
        labels = torch.randint(0, 101, (2, tokens))
        torch.testing.assert_close(compiled(logits, labels), _hf_causal_loss(logits, labels))


def _loss_gradient(logits, labels):
    logits = logits.detach().requires_grad_()
    (grad,) = torch.autograd.grad(_hf_causal_loss(logits, labels), logits)
    return grad


def _float_inputs(vocab=101):
    logits, labels = _inputs(vocab)
    return logits.float(), labels


def test_the_backwards_one_hot_scatter_becomes_a_comparison():
    from nvfuse.dynamo.passes.one_hot_scatters import rewrite_one_hot_scatters

    gm = aten_graph(_loss_gradient, *_float_inputs())
    assert any(n.target is aten.scatter.value for n in gm.graph.nodes)
    assert rewrite_one_hot_scatters(gm) == 1
    assert all(n.target is not aten.scatter.value for n in gm.graph.nodes)
    torch.testing.assert_close(gm(*_float_inputs()), _loss_gradient(*_float_inputs()))


def test_a_scatter_of_several_elements_a_row_stays():
    from nvfuse.dynamo.passes.one_hot_scatters import rewrite_one_hot_scatters

    def two_a_row(x, index):
        return torch.zeros_like(x).scatter(1, index, -1.0) + x

    x, index = torch.randn(4, 7), torch.tensor([[0, 1], [2, 3], [4, 5], [6, 0]])
    gm = aten_graph(two_a_row, x, index)
    assert rewrite_one_hot_scatters(gm) == 0
    torch.testing.assert_close(gm(x, index), two_a_row(x, index))


def test_the_compiled_loss_backward_runs_without_a_scatter_kernel():
    import nvfuse.dynamo

    logits, labels = _float_inputs()
    compiled = torch.compile(_loss_gradient, backend="nvfuse")
    torch.testing.assert_close(compiled(logits, labels), _loss_gradient(logits, labels))
    ops = [
        str(target)
        for report in nvfuse.dynamo.reports()
        for _, targets in report.fusions
        for target in targets
    ] + [str(target) for report in nvfuse.dynamo.reports() for _, target, _ in report.unfused]
    assert ops and not any("scatter" in op for op in ops), ops


def test_the_loss_and_its_gradient_compile_with_nvrtc():
    """The regions' kernels (the one-hot as a comparison inside the
    gradient's reduction kernel among them) compile, without a GPU."""
    from nvfuse import _C
    from nvfuse.dynamo.pipeline import compile_graph

    logits, labels = _float_inputs()
    gm = aten_graph(_loss_gradient, logits, labels)
    run = compile_graph(gm, [logits, labels], "inference")
    seen = record_definitions([r for r in gm.children() if isinstance(r, FusedRegion)])
    out = run([logits, labels])
    out = out[0] if isinstance(out, (tuple, list)) else out
    torch.testing.assert_close(out, _loss_gradient(logits, labels))
    kernels = [
        part
        for fd, region_args in seen
        for part in fd.cuda_code_for(region_args).split("// ==== nvfuse segment: fused ====\n")
        if "__global__" in part
    ]
    assert kernels and any("iota" in part or "nvfuse_reduction" in part for part in kernels)
    for part in kernels:
        name = re.search(r"__global__ void (?:__launch_bounds__\(\d+\) )?(\w+)\(", part).group(1)
        assert _C.nvrtc_compile(part, name, 90)["bytes"] > 0


def _rewritten_gradient_graph():
    from nvfuse.dynamo.passes.one_hot_scatters import rewrite_one_hot_scatters

    gm = aten_graph(_loss_gradient, *_float_inputs())
    rewrite_one_hot_scatters(gm)
    return gm


def _sums(gm):
    return [n for n in gm.graph.nodes if n.target is aten.sum.dim_IntList]


def test_the_backwards_row_sum_of_the_one_hot_becomes_a_number():
    from nvfuse.dynamo.passes.one_hot_sums import rewrite_one_hot_sums

    gm = _rewritten_gradient_graph()
    one_hot_products = [n for n in _sums(gm) if n.args[0].target is aten.mul.Tensor]
    assert len(one_hot_products) == 1
    assert rewrite_one_hot_sums(gm) == 1
    # The forward's sum of exponentials remains.
    assert [n.args[0].target for n in _sums(gm) if n.args[0].meta["val"].dim() == 2] == [
        aten.exp.default
    ]
    torch.testing.assert_close(gm(*_float_inputs()), _loss_gradient(*_float_inputs()))


def test_a_row_sum_of_a_one_hot_keeps_torchs_nan_for_an_infinite_factor():
    from nvfuse.dynamo.passes.one_hot_scatters import rewrite_one_hot_scatters
    from nvfuse.dynamo.passes.one_hot_sums import rewrite_one_hot_sums

    def one_hot_sum(weight, index, keepdim):
        hot = torch.zeros(4, 7).scatter(1, index, 2.0)
        return (hot * weight).sum(1, keepdim=keepdim), (weight * hot).sum(-1)

    weight = torch.tensor([[1.5], [float("inf")], [float("-inf")], [float("nan")]])
    index = torch.tensor([[0], [3], [6], [2]])
    for keepdim in (True, False):
        gm = aten_graph(lambda w, i: one_hot_sum(w, i, keepdim), weight, index)
        rewrite_one_hot_scatters(gm)
        assert rewrite_one_hot_sums(gm) == 2
        assert not _sums(gm)
        for got, want in zip(gm(weight, index), one_hot_sum(weight, index, keepdim)):
            torch.testing.assert_close(got, want, equal_nan=True)
            assert got.shape == want.shape


def test_a_sum_whose_factor_varies_along_the_axis_stays():
    from nvfuse.dynamo.passes.one_hot_scatters import rewrite_one_hot_scatters
    from nvfuse.dynamo.passes.one_hot_sums import rewrite_one_hot_sums

    def varying(x, index):
        return (torch.zeros_like(x).scatter(1, index, -1.0) * x).sum(1)

    def other_axis(x, index):
        return (torch.zeros_like(x).scatter(1, index, -1.0) * x[:, :1]).sum(0)

    x, index = torch.randn(4, 7), torch.randint(0, 7, (4, 1))
    for fn in (varying, other_axis):
        gm = aten_graph(fn, x, index)
        rewrite_one_hot_scatters(gm)
        assert rewrite_one_hot_sums(gm) == 0
        torch.testing.assert_close(gm(x, index), fn(x, index))


def test_the_compiled_loss_backward_is_one_pointwise_kernel():
    """Without the row sum, the backward's region is elementwise work (the
    reshape back to [batch, sequence, vocabulary] a view of its output):
    one kernel that reads the logits once and writes the gradient."""
    logits, labels = _inputs(4096)
    logits.requires_grad_()
    with _kernels_per_region_call() as calls:
        torch.compile(_hf_causal_loss, backend="nvfuse")(logits, labels).backward()
    torch.testing.assert_close(logits.grad, _loss_gradient(*_inputs(4096)))
    # One elementwise kernel (a coordinate kernel: the one-hot's arange
    # reads each element's column), not a reduction.
    (backward_kernel,) = calls[-1]
    assert not backward_kernel.startswith("nvfuse_reduction"), calls


def test_a_one_hot_compared_by_hand_stays_summed():
    """Only scatters' one-hots are rewritten: an index compared with an
    arange by hand may be out of range (an ignored label), and its row
    then sums to 0, not to the value."""
    from nvfuse.dynamo.passes.one_hot_scatters import rewrite_one_hot_scatters
    from nvfuse.dynamo.passes.one_hot_sums import rewrite_one_hot_sums

    def by_hand(weight, labels):
        hot = torch.where(torch.arange(7) == labels[:, None], 2.0, 0.0)
        return (hot * weight).sum(1)

    weight, labels = torch.randn(4, 1), torch.tensor([0, -100, 6, 3])
    gm = aten_graph(by_hand, weight, labels)
    rewrite_one_hot_scatters(gm)
    assert rewrite_one_hot_sums(gm) == 0
    torch.testing.assert_close(gm(weight, labels), by_hand(weight, labels))
    assert gm(weight, labels)[1] == 0
