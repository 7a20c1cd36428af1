"""reciprocal(sqrt(x)) as rsqrt(x) (passes/reciprocal_square_roots.py):
batch norm's inference graph folds, a square root read elsewhere too does
not, special values match torch's, and the compiled batch norm matches
eager."""

import torch

import nvfuse.dynamo  # noqa: F401 (registers the backend)
from nvfuse.dynamo.passes.reciprocal_square_roots import fold_reciprocal_square_roots

from .conftest import aten_graph

aten = torch.ops.aten


def _targets(gm):
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


def test_batch_norm_inference_takes_one_rsqrt():
    x = torch.randn(2, 8, 5, 5)
    mean, var, weight, bias = torch.randn(8), torch.rand(8) + 0.5, torch.randn(8), torch.randn(8)

    def norm(x, mean, var, weight, bias):
        return torch.nn.functional.batch_norm(x, mean, var, weight, bias, False)

    args = (x, mean, var, weight, bias)
    with torch.no_grad():
        gm = aten_graph(norm, *args)
    assert aten.sqrt.default in _targets(gm)  # torch's decomposition: 1 / sqrt(var + eps)
    assert fold_reciprocal_square_roots(gm) == 1
    targets = _targets(gm)
    assert aten.rsqrt.default in targets
    assert aten.sqrt.default not in targets and aten.reciprocal.default not in targets
    got = gm(*args)
    torch.testing.assert_close(got[0] if isinstance(got, (tuple, list)) else got, norm(*args))


def test_a_square_root_read_elsewhere_stays():
    def both(x):
        root = torch.sqrt(x)
        return torch.reciprocal(root), root * 2

    gm = aten_graph(both, torch.rand(4))
    assert fold_reciprocal_square_roots(gm) == 0
    assert aten.reciprocal.default in _targets(gm)


def test_special_values_match_torch():
    x = torch.tensor([0.0, -0.0, float("inf"), -1.0, float("nan"), 1e-40, 4.0])
    gm = aten_graph(lambda t: torch.reciprocal(torch.sqrt(t)), x)
    assert fold_reciprocal_square_roots(gm) == 1
    torch.testing.assert_close(gm(x), torch.reciprocal(torch.sqrt(x)), equal_nan=True)


def test_compiled_batch_norm_matches_eager():
    torch.manual_seed(0)
    norm = torch.nn.BatchNorm2d(16).eval()
    norm.running_var.uniform_(0.5, 2.0)
    norm.running_mean.normal_()
    x = torch.randn(4, 16, 7, 7).to(memory_format=torch.channels_last)
    compiled = torch.compile(norm, backend="nvfuse")
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), norm(x))
