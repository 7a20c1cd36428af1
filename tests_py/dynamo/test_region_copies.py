"""Copies inside a region (aten.clone, alias) are their input there
(region.COPIES): no copy kernel, and a permute of the copy is a zero-copy
view of the region's input. The shape is timm ConvNeXt's block end."""

import torch
import torch.nn.functional as F


from .conftest import aten_graph, fused_regions, record_definitions


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


def test_a_copy_read_inside_a_region_is_no_kernel_and_its_permute_a_view():
    args = _inputs()
    gm = aten_graph(_block_end, *args)
    assert any(n.target == torch.ops.aten.clone.default for n in gm.graph.nodes)
    fused, regions = fused_regions(gm)
    seen = record_definitions(regions)
    torch.testing.assert_close(fused(*args), _block_end(*args))
    ((fd, _),) = seen
    summary = fd.segment_summary()
    assert all("set" not in ops for _, ops in summary), summary
    assert summary[0] == ("view", ["permute"]), summary


def test_a_copy_of_an_input_returned_is_a_fresh_tensor():
    """`empty_like(w).copy_(w)` runs as w itself inside the fusion; the
    region returns a copy, as torch promised a tensor of its own (writing
    it must not change w)."""

    def fn(w, x):
        y = torch.empty_like(w)
        y.copy_(w)
        return y, (x * 2).relu()

    w, x = torch.randn(4, 4), torch.randn(4, 4)
    compiled = torch.compile(fn, backend="nvfuse")
    for _ in range(2):  # the first call and the cached one
        y, _ = compiled(w, x)
        assert y.data_ptr() != w.data_ptr()
        torch.testing.assert_close(y, w)
