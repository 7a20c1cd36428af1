"""A scalar_tensor that elementwise ops read as a value operand beside a
tensor is the number it holds inside a region (region._is_operand_number):
no 0-d fill cut into a kernel of its own next to a reduction."""

import torch


from .conftest import aten_graph, fused_regions, record_definitions


def _summaries(fn, *args):
    fused, regions = fused_regions(aten_graph(fn, *args))
    seen = record_definitions(regions)
    torch.testing.assert_close(fused(*args), fn(*args))
    return [fd.segment_summary() for fd, _ in seen]


def test_a_masked_row_sum_has_no_fill_kernel():
    def masked_row_sum(x, keep):
        zero = torch.ops.aten.scalar_tensor.default(0.0, dtype=x.dtype)
        return torch.where(keep, x, zero).sum(1) + x.amax(1)

    x = torch.randn(5, 7)
    (summary,) = _summaries(masked_row_sum, x, x > 0)
    assert all("full" not in ops for _, ops in summary), summary


def test_numbers_alone_stay_tensors():
    def sum_of_constants(x):
        one = torch.ops.aten.scalar_tensor.default(1.0, dtype=x.dtype)
        two = torch.ops.aten.scalar_tensor.default(2.0, dtype=x.dtype)
        return (x * (one + two)).exp()

    _summaries(sum_of_constants, torch.randn(4, 3))
