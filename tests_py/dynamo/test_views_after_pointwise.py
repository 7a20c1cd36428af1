"""A reshape read by an elementwise op moves below it
(passes/views_after_pointwise.py), so that the op joins the kernel before
the reshape: a language model's loss gradient, reshaped and added to the
logits' own gradient, is one kernel with the add."""

import torch

from nvfuse.dynamo.passes.views_after_pointwise import move_views_after_pointwise

from .conftest import aten_graph, fused_regions, record_definitions

aten = torch.ops.aten


def _gradient_plus_tangent(rows, tangent):
    # softmax-like row work on [tokens, vocabulary], reshaped to [batch,
    # sequence, vocabulary] and added to the logits' gradient.
    grad = torch.exp(rows - rows.amax(1, keepdim=True)) * 0.5
    return tangent + grad.view(tangent.shape)


def _inputs():
    g = torch.Generator().manual_seed(0)
    return torch.randn(12, 101, generator=g), torch.randn(2, 6, 101, generator=g)


def test_the_reshape_moves_below_the_add():
    gm = aten_graph(_gradient_plus_tangent, *_inputs())
    assert move_views_after_pointwise(gm) == 1
    (add,) = [n for n in gm.graph.nodes if n.target is aten.add.Tensor]
    assert all(a.target is not aten.view.default for a in add.args)
    assert tuple(add.meta["val"].shape) == (12, 101)
    torch.testing.assert_close(gm(*_inputs()), _gradient_plus_tangent(*_inputs()))


def test_an_op_with_a_broadcast_operand_keeps_its_view():
    def broadcast_add(x, bias):
        return x.view(2, 6, 101) + bias

    gm = aten_graph(broadcast_add, torch.randn(12, 101), torch.randn(101))
    assert move_views_after_pointwise(gm) == 0


def test_the_region_is_one_kernel_with_the_add():
    args = _inputs()
    gm = aten_graph(_gradient_plus_tangent, *args)
    move_views_after_pointwise(gm)
    fused, regions = fused_regions(gm)
    seen = record_definitions(regions)
    torch.testing.assert_close(fused(*args), _gradient_plus_tangent(*args))
    ((fd, _),) = seen
    summary = fd.segment_summary()
    assert [kind for kind, _ in summary if kind == "fused"] == ["fused"], summary


def _reshaped_then_cast(rows):
    # The loss gradient's end: computed in float32 over [tokens,
    # vocabulary], reshaped, cast back to the logits' dtype as the output.
    grad = torch.exp(rows - rows.amax(1, keepdim=True))
    return grad.view(2, 6, 101).to(torch.bfloat16)


def test_a_cast_the_output_reads_moves_above_the_reshape():
    rows = _inputs()[0]
    gm = aten_graph(_reshaped_then_cast, rows)
    assert move_views_after_pointwise(gm) == 1
    (output,) = [n for n in gm.graph.nodes if n.op == "output"]
    (result,) = output.args[0] if isinstance(output.args[0], (tuple, list)) else [output.args[0]]
    assert result.target is aten.reshape.default
    assert result.args[0].target is aten._to_copy.default
    torch.testing.assert_close(gm(rows), _reshaped_then_cast(rows))


def test_a_cast_of_a_reshaped_input_or_read_by_an_op_stays():
    def cast_of_input(x):
        return x.view(2, 6, 101).to(torch.bfloat16)

    def cast_read_by_an_op(rows):
        return _reshaped_then_cast(rows) * 2

    rows = _inputs()[0]
    for fn in (cast_of_input, cast_read_by_an_op):
        gm = aten_graph(fn, rows)
        assert move_views_after_pointwise(gm) == 0
        torch.testing.assert_close(gm(rows), fn(rows))


def _residual_then_norm(a, w, residual):
    # Llama's attention output projection, viewed from [tokens, width] to
    # [batch, sequence, width], added to the residual, then normed.
    hidden = residual + (a @ w).view(residual.shape)
    return hidden * torch.rsqrt(hidden.pow(2).mean(-1, keepdim=True) + 1e-6)


def _residual_inputs():
    g = torch.Generator().manual_seed(0)
    return (
        torch.randn(12, 32, generator=g),
        torch.randn(32, 64, generator=g),
        torch.randn(2, 6, 64, generator=g),
    )


def test_a_view_of_a_gemms_result_stays_ahead_of_the_add():
    """A view of what a region reads (an ATen GEMM's result) is a host
    view where it is; moved below the add it would reshape the add's
    result inside the region and cut the norm into a kernel of its own."""
    gm = aten_graph(_residual_then_norm, *_residual_inputs())
    assert move_views_after_pointwise(gm) == 0
    fused, regions = fused_regions(gm)
    seen = record_definitions(regions)
    torch.testing.assert_close(fused(*_residual_inputs()), _residual_then_norm(*_residual_inputs()))
    ((fd, _),) = seen
    assert [kind for kind, _ in fd.segment_summary()] == ["fused"], fd.segment_summary()
