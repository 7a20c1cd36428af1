"""Partitioning (passes/partition.py) and the report (report.py) on small
ATen graphs."""

import operator

import torch

from nvfuse.dynamo.passes.partition import propose_regions
from nvfuse.dynamo.report import GEMM_REASON, counts_as_op
from nvfuse.dynamo.support import NvfuseSupport

from .conftest import aten_graph


def test_the_items_of_a_split_stay_in_its_region():
    def f(x):
        a, b = (x * 2).split([4, 4], -1)
        return a @ b.t()  # the GEMM reads both pieces outside the region

    gm = aten_graph(f, torch.randn(4, 8))
    _, partitions = propose_regions(gm, NvfuseSupport())
    (region,) = partitions
    items = [n for n in region.nodes if n.target is operator.getitem]
    assert len(items) == 2


def test_a_lone_op_is_no_region():
    gm = aten_graph(lambda x, w: (x @ w).exp() @ w, torch.randn(4, 4), torch.randn(4, 4))
    _, partitions = propose_regions(gm, NvfuseSupport())
    assert partitions == []


def test_gemms_and_views_are_not_counted_as_ops():
    gm = aten_graph(lambda x, w: (x @ w).view(-1).exp(), torch.randn(4, 4), torch.randn(4, 4))
    counted = [n.target for n in gm.graph.nodes if counts_as_op(n)]
    assert counted == [torch.ops.aten.exp.default]


def test_the_report_counts_the_share_of_ops_in_nvfuse():
    import nvfuse.dynamo

    torch.compile(lambda x, w: ((x @ w) * 2).exp().sum(), backend="nvfuse")(
        torch.randn(4, 4), torch.randn(4, 4)
    )
    (report,) = nvfuse.dynamo.reports()
    assert report.fused_ops == report.non_gemm_ops == 3
    assert any(reason == GEMM_REASON for _, _, reason in report.unfused)


def _norms_then_loss(x, w, logits):
    """Two layer norms around a GEMM, each saving its statistics cast to
    bf16 (as a training graph's forward returns them for the backward),
    then a loss over other logits."""
    saved = []
    for _ in range(2):
        xf = x.float()
        mean = xf.mean(-1, keepdim=True)
        rstd = torch.rsqrt((xf - mean).pow(2).mean(-1, keepdim=True) + 1e-5)
        saved += [mean.to(torch.bfloat16), rstd.to(torch.bfloat16)]
        x = (((xf - mean) * rstd).to(torch.bfloat16) @ w).relu()
    return x, logits.float().log_softmax(-1).sum(), *saved


def test_saved_casts_stay_with_the_region_that_computes_their_source():
    x, w = torch.randn(8, 16, dtype=torch.bfloat16), torch.randn(16, 16, dtype=torch.bfloat16)
    gm = aten_graph(_norms_then_loss, x, w, torch.randn(8, 32, dtype=torch.bfloat16))
    _, partitions = propose_regions(gm, NvfuseSupport())
    saved = [
        n
        for n in gm.graph.nodes
        if n.op == "call_function"
        and n.target is torch.ops.aten._to_copy.default
        and all(u.op == "output" for u in n.users)
    ]
    assert len(saved) == 4
    for cast in saved:
        (home,) = [p for p in partitions if cast in p.nodes]
        assert cast.args[0] in home.nodes, cast


def _two_batch_norms(x, w, mean1, var1, mean2, var2):
    """Two training batch norms around a convolution, each updating its
    running statistics in place (functionalization's copy_ at the end)."""
    out = torch.nn.functional.batch_norm(x, mean1, var1, training=True).relu()
    out = torch.nn.functional.conv2d(out, w)
    return torch.nn.functional.batch_norm(out, mean2, var2, training=True).relu()


def test_running_statistics_updates_join_the_region_of_their_batch_norm():
    from nvfuse.dynamo.passes.in_place_updates import is_input_update, mark_in_place_updates

    stats = [torch.zeros(4), torch.ones(4), torch.zeros(4), torch.ones(4)]
    gm = aten_graph(_two_batch_norms, torch.randn(2, 4, 6, 6), torch.randn(4, 4, 1, 1), *stats)
    mark_in_place_updates(gm)
    _, partitions = propose_regions(gm, NvfuseSupport())
    updates = [n for n in gm.graph.nodes if is_input_update(n)]
    assert len(updates) == 4
    for update in updates:
        (home,) = [p for p in partitions if update in p.nodes]
        # The statistics the update reads are computed in the same region
        # (not in a region of updates at the graph's end).
        assert any("var_mean" in str(n.target) for n in home.nodes), update
    homes = {id(p) for u in updates for p in partitions if u in p.nodes}
    assert len(homes) == 2


def test_a_large_view_read_outside_does_not_move_into_a_region():
    from nvfuse.dynamo.passes import partition

    def f(x, w):
        flat = x.exp().view(-1)
        return flat.view(x.shape) @ w, flat.to(torch.bfloat16)

    for rows, costly in [(4, False), (4096, True)]:
        gm = aten_graph(f, torch.randn(rows, 512), torch.randn(512, 8))
        view = next(n for n in gm.graph.nodes if n.target is torch.ops.aten.view.default)
        cast = next(u for u in view.users if u.target is torch.ops.aten._to_copy.default)

        class Source:
            nodes = {}

        # Read by the GEMM (outside) too: moving it makes it a region output.
        assert partition._costly_as_output(view, {cast}, Source()) is costly


def _batch_norm_affine(x, weight, bias, mean, invstd):
    """Batch norm's normalization as its decomposition writes it: the [C]
    weight, bias and statistics viewed [C, 1, 1] or [1, C, 1, 1]."""
    centered = x - mean.unsqueeze(0).unsqueeze(-1).unsqueeze(-1)
    scale = (invstd * weight).unsqueeze(-1).unsqueeze(-1)
    return (centered * scale + bias.view(-1, 1, 1)).relu()


def _outer_views(gm):
    views = {torch.ops.aten.unsqueeze.default, torch.ops.aten.view.default}
    return [n for n in gm.graph.nodes if n.op == "call_function" and n.target in views]


def test_views_that_broadcast_a_regions_inputs_join_the_region():
    """Each [C] input's unsqueezes and view run inside the region, where
    the fusion broadcasts them, not as host calls before it; the results
    are eager's."""
    from nvfuse.dynamo.passes.partition import partition_regions

    c = 3
    args = (torch.randn(2, c, 4, 5), *(torch.randn(c) for _ in range(4)))
    gm = aten_graph(_batch_norm_affine, *args)
    before = len(_outer_views(gm))
    fused, _ = partition_regions(gm, NvfuseSupport())
    assert before == 6 and _outer_views(fused) == []
    compiled = torch.compile(_batch_norm_affine, backend="nvfuse")
    torch.testing.assert_close(compiled(*args), _batch_norm_affine(*args))


def test_a_broadcast_view_read_outside_its_region_stays_outside():
    """A view that an ATen op (here a GEMM) reads too stays a host view:
    moved in, it would be one more output of the region."""
    from nvfuse.dynamo.passes.partition import partition_regions

    def f(x, w, v):
        column = v.unsqueeze(-1)
        return (x * column).exp() @ w + column

    args = torch.randn(4, 4), torch.randn(4, 4), torch.randn(4)
    fused, _ = partition_regions(aten_graph(f, *args), NvfuseSupport())
    assert len(_outer_views(fused)) == 1
    torch.testing.assert_close(torch.compile(f, backend="nvfuse")(*args), f(*args))


def test_squeezes_of_a_regions_statistics_join_the_region():
    """Batch norm's saved statistics, squeezed to [C] for the backward: the
    region returns them squeezed (no host call after it); a squeeze of
    other values it returns (a pointwise result) stays outside."""
    from nvfuse.dynamo.passes.partition import partition_regions

    def f(x):
        var, mean = torch.var_mean(x, (0, 2, 3), keepdim=True, correction=0)
        invstd = torch.rsqrt(var + 1e-5)  # elementwise ops of statistics
        shifted = x * 2 + 1
        normed = ((x - mean) * invstd).relu()
        return normed, mean.squeeze((0, 2, 3)), invstd.squeeze((0, 2, 3)), shifted.squeeze(0)

    args = (torch.randn(1, 3, 4, 5),)
    fused, _ = partition_regions(aten_graph(f, *args), NvfuseSupport())
    squeezes = [n for n in fused.graph.nodes if n.target is torch.ops.aten.squeeze.dims]
    assert [tuple(n.meta["val"].shape) for n in squeezes] == [(3, 4, 5)]
    for got, want in zip(torch.compile(f, backend="nvfuse")(*args), f(*args)):
        torch.testing.assert_close(got, want)


def test_a_long_chain_of_ops_over_statistics_is_walked_once():
    """Each op of the chain reads the op before twice (directly and through
    an add), so a walk without a memo would ask 2**40 times. The chain is
    longer than the walk goes, so its squeeze stays outside the region."""
    from nvfuse.dynamo.passes.partition import partition_regions

    def f(x):
        s = x.sum((0, 2), keepdim=True)
        for _ in range(40):
            s = (s + 1) * s
        return x - s, s.squeeze((0, 2))

    args = (torch.rand(1, 3, 4) * 1e-3,)
    fused, _ = partition_regions(aten_graph(f, *args), NvfuseSupport())
    squeezes = [n for n in fused.graph.nodes if n.target is torch.ops.aten.squeeze.dims]
    assert len(squeezes) == 1
