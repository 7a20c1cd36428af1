"""Operands without elements leave cats and slice scatters
(passes/empty_operands.py): Phi-3's rotary embedding, which concatenates
the rotated head with an empty rest and scatters that rest's empty
gradient, reaches its regions without empty tensors (a region reading one
runs on the ATen reference evaluator), forward and backward, and still
matches eager; rewrites that would change a tensor's dtype or layout are
left alone."""

import pytest
import torch

import nvfuse.dynamo  # noqa: F401 (registers the backend)
from nvfuse.dynamo.passes.empty_operands import drop_empty_operands

from .conftest import aten_graph, fused_regions, record_definitions

aten = torch.ops.aten


def _rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def _full_rotary(q, cos, sin):
    """Phi-3's apply_rotary_pos_emb with a rotary dimension of the whole
    head: the pass-through part is q[..., head_dim:], empty."""
    rotary_dim = cos.shape[-1]
    q_rot, q_pass = q[..., :rotary_dim], q[..., rotary_dim:]
    return torch.cat([q_rot * cos + _rotate_half(q_rot) * sin, q_pass], dim=-1)


def _rotary_inputs(requires_grad=False):
    torch.manual_seed(0)
    q = torch.randn(2, 3, 5, 8, requires_grad=requires_grad)
    angles = torch.randn(5, 8)
    return q, angles.cos(), angles.sin()


def _operands_of(gm, target):
    return [x for n in gm.graph.nodes if n.target == target for x in n.all_input_nodes]


def _empty(node):
    value = node.meta.get("val")
    return isinstance(value, torch.Tensor) and value.numel() == 0


def test_the_rotary_cat_drops_its_empty_operand_and_its_slice():
    args = _rotary_inputs()
    gm = aten_graph(_full_rotary, *args)
    assert any(_empty(x) for x in _operands_of(gm, aten.cat.default))
    assert drop_empty_operands(gm) == 1
    assert not any(_empty(n) for n in gm.graph.nodes)  # the empty slice went too
    torch.testing.assert_close(gm(*args), _full_rotary(*args))


def test_a_scatter_of_an_empty_source_is_a_copy_of_its_base():
    def scatter(base, src):
        return torch.slice_scatter(base * 2, src, dim=1, start=4, end=4)

    base, src = torch.randn(3, 6), torch.randn(3, 0)
    gm = aten_graph(scatter, base, src)
    assert drop_empty_operands(gm) == 1
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert aten.slice_scatter.default not in targets and aten.clone.default in targets
    torch.testing.assert_close(gm(base, src), scatter(base, src))


def test_an_empty_operand_of_a_wider_dtype_stays():
    # cat promotes over every operand: without the empty fp32 one the
    # result would be bf16.
    def widening(x, empty):
        return torch.cat([x, empty], dim=0)

    x, empty = torch.randn(3, 4, dtype=torch.bfloat16), torch.randn(0, 4)
    gm = aten_graph(widening, x, empty)
    assert drop_empty_operands(gm) == 0
    assert gm(x, empty).dtype == torch.float32


def test_a_cat_of_only_empty_operands_stays():
    gm = aten_graph(lambda a, b: torch.cat([a, b], dim=1), torch.randn(2, 0), torch.randn(2, 0))
    assert drop_empty_operands(gm) == 0


@pytest.mark.parametrize("training", [False, True], ids=["inference", "training"])
def test_compiled_rotary_matches_eager_and_no_region_reads_an_empty_tensor(training, monkeypatch):
    from nvfuse.dynamo import pipeline

    rewrites = []
    monkeypatch.setattr(
        pipeline, "drop_empty_operands", lambda gm: rewrites.append(drop_empty_operands(gm))
    )
    q, cos, sin = _rotary_inputs(requires_grad=training)
    gm = aten_graph(_full_rotary, q.detach(), cos, sin)
    drop_empty_operands(gm)
    _, regions = fused_regions(gm)
    seen = record_definitions(regions)
    gm(q.detach(), cos, sin)
    assert seen and not any(
        isinstance(a, torch.Tensor) and a.numel() == 0 for _, args in seen for a in args
    )

    compiled = torch.compile(_full_rotary, backend="nvfuse")
    got, want = compiled(q, cos, sin), _full_rotary(q, cos, sin)
    torch.testing.assert_close(got, want)
    if training:
        grad = torch.randn_like(want)
        (got_grad,) = torch.autograd.grad(got, q, grad)
        (want_grad,) = torch.autograd.grad(want, q, grad)
        torch.testing.assert_close(got_grad, want_grad)
    # The backend's pipeline ran the pass: the forward's cat, and the
    # backward's scatter of the empty gradient.
    assert rewrites == ([1, 1] if training else [1])
