"""Copies inside a region (aten.clone, alias) are their input there
(region.COPIES): no copy kernel, and a permute of the copy is a zero-copy
view of the region's input. The shape is timm ConvNeXt's block end."""

import torch
import torch.nn.functional as F

from nvfuse.dynamo.passes.in_place_updates import mark_in_place_updates
from nvfuse.dynamo.passes.partition import partition_regions
from nvfuse.dynamo.passes.regions import install_regions
from nvfuse.dynamo.region import FusedRegion
from nvfuse.dynamo.support import NvfuseSupport

from .conftest import aten_graph


def _block_end(mlp_out, gamma, shortcut, weight, bias):
    # the MLP's output permuted back to NCHW, scaled, added to the
    # shortcut, then the next layer norm over channels-last.
    x = mlp_out.clone().permute(0, 3, 1, 2) * gamma.reshape(1, -1, 1, 1) + shortcut
    return F.layer_norm(x.permute(0, 2, 3, 1), [x.shape[1]], weight, bias, 1e-6)


def _inputs():
    n, h, w, c = 2, 5, 6, 8
    return (
        torch.randn(n, h, w, c),
        torch.randn(c),
        torch.randn(n, c, h, w),
        torch.randn(c),
        torch.randn(c),
    )


def _regions(gm):
    gm.graph.eliminate_dead_code()
    mark_in_place_updates(gm)
    fused, _ = partition_regions(gm, NvfuseSupport())
    install_regions(fused)
    return fused, [r for r in fused.children() if isinstance(r, FusedRegion)]


def test_a_copy_read_inside_a_region_is_no_kernel_and_its_permute_a_view():
    args = _inputs()
    gm = aten_graph(_block_end, *args)
    assert any(n.target == torch.ops.aten.clone.default for n in gm.graph.nodes)
    fused, regions = _regions(gm)
    (region,) = regions
    summary = region.definition_for(list(_region_args(fused, region, args))).segment_summary()
    assert all("set" not in ops for _, ops in summary), summary
    assert summary[0] == ("view", ["permute"]), summary
    torch.testing.assert_close(fused(*args), _block_end(*args))


def _region_args(fused, region, args):
    """The arguments `region` gets when `fused` runs on `args`."""
    seen = []
    original = region.forward

    def record(*region_args):
        seen.extend(region_args)
        return original(*region_args)

    region.forward = record
    try:
        fused(*args)
    finally:
        region.forward = original
    return seen
