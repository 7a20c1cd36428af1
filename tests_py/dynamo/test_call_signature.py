"""`_C.call_signature`, a compiled region's per-call cache key: equal
exactly when every tensor has the same dtype, device, layout, sizes and
strides and every other item the same type."""

import torch

from nvfuse import _C


def _signature(*items):
    return _C.call_signature(list(items))


def test_equal_layouts_share_a_signature_whatever_the_values():
    a, b = torch.randn(4, 6), torch.randn(4, 6)
    assert _signature(a, 3) == _signature(b, 7)
    assert _C.call_signature((a, b)) == _C.call_signature([b, a])


def test_every_difference_in_layout_or_kind_changes_it():
    x = torch.randn(4, 6)
    base = _signature(x)
    others = [
        _signature(x.t().contiguous().t()),  # same sizes, other strides
        _signature(x.view(6, 4)),  # other sizes
        _signature(x.view(2, 2, 6)),  # other rank
        _signature(x.double()),  # other dtype
        _signature(x[:, :3]),  # a strided view
        _signature(x.to_sparse()),  # another layout
        _signature(x, x),  # another count
        _signature(2.0),  # not a tensor
    ]
    assert all(s != base for s in others)
    assert len(set(others)) == len(others)
    assert _signature(1) != _signature(1.0)


def test_a_region_keeps_one_call_entry_per_layout():
    from nvfuse.dynamo.region import FusedRegion
    from torch.fx.experimental.proxy_tensor import make_fx

    gm = make_fx(lambda a, b: torch.relu(a * b))(torch.randn(4, 6), torch.randn(4, 6))
    region = FusedRegion(gm, "r")
    x, y = torch.randn(4, 6), torch.randn(4, 6)
    torch.testing.assert_close(region(x, y), torch.relu(x * y))
    torch.testing.assert_close(region(y, x), torch.relu(x * y))
    assert len(region._calls) == 1
    xt = x.t().contiguous().t()
    torch.testing.assert_close(region(xt, y), torch.relu(x * y))
    assert len(region._calls) == 2
