"""reciprocal(exp(-x) + 1) as sigmoid(x) (passes/sigmoid_forms.py): silu's
backward folds, a spelled-out sigmoid whose parts are read elsewhere does
not, and the compiled SwiGLU's gradients match eager."""

import torch

import nvfuse.dynamo  # noqa: F401 (registers the backend)
from nvfuse.dynamo.passes.sigmoid_forms import fold_sigmoids

from .conftest import aten_graph

aten = torch.ops.aten


def _targets(gm):
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


def test_silu_backward_takes_a_sigmoid():
    x = torch.randn(4, 8)
    grad = torch.randn(4, 8)
    gm = aten_graph(lambda g, t: torch.ops.aten.silu_backward(g, t), grad, x)
    assert aten.reciprocal.default in _targets(gm)  # torch's decomposition: 1 / (1 + exp(-x))
    assert fold_sigmoids(gm) == 1
    targets = _targets(gm)
    assert aten.sigmoid.default in targets
    assert not {aten.reciprocal.default, aten.exp.default, aten.neg.default} & set(targets)
    torch.testing.assert_close(gm(grad, x), torch.ops.aten.silu_backward(grad, x))


def test_one_plus_first_folds_too():
    gm = aten_graph(lambda t: torch.reciprocal(1 + torch.exp(-t)), torch.randn(5))
    assert fold_sigmoids(gm) == 1


def test_parts_read_elsewhere_stay():
    def spelled(t):
        e = torch.exp(-t)
        return torch.reciprocal(e + 1), e

    gm = aten_graph(spelled, torch.randn(5))
    assert fold_sigmoids(gm) == 0
    gm = aten_graph(lambda t: torch.reciprocal(torch.exp(-t) + 2), torch.randn(5))
    assert fold_sigmoids(gm) == 0


def test_compiled_swiglu_gradients_match_eager():
    torch.manual_seed(0)
    gate, up = torch.nn.Linear(16, 32), torch.nn.Linear(16, 32)

    def swiglu(x):
        return torch.nn.functional.silu(gate(x)) * up(x)

    x = torch.randn(8, 16, requires_grad=True)
    x_ref = x.detach().clone().requires_grad_()
    torch.compile(swiglu, backend="nvfuse")(x).sum().backward()
    swiglu(x_ref).sum().backward()
    torch.testing.assert_close(x.grad, x_ref.grad)
