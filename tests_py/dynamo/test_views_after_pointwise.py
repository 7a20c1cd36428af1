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
