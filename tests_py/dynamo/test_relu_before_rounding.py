"""relu(cast(x)) as cast(relu(x)) for a narrowing float cast on CUDA
(passes/relu_before_rounding.py): the rewrite on a fake CUDA graph (no GPU
needed); a cast read elsewhere, a widening one and a CPU graph stay; on a
GPU, bit-identical to eager, -0.0, tiny negatives and NaN included."""

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx

import nvfuse.dynamo  # noqa: F401 (registers the backend)
from nvfuse.dynamo.passes.relu_before_rounding import move_relus_before_roundings

from .conftest import aten_graph

aten = torch.ops.aten


def _cuda_graph(fn, dtype=torch.float32):
    """fn traced on a fake CUDA tensor (meta values on cuda, no GPU)."""
    with FakeTensorMode():
        x = torch.empty(8, 16, device="cuda", dtype=dtype)
    return make_fx(fn, tracing_mode="fake")(x)


def _targets(gm):
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_relu_moves_before_the_rounding(dtype):
    gm = _cuda_graph(lambda t: torch.relu(t.to(dtype)))
    assert move_relus_before_roundings(gm) == 1
    targets = _targets(gm)
    assert targets[0] == aten.relu.default and targets[-1] == aten._to_copy.default


def test_a_cast_read_elsewhere_widening_or_on_the_cpu_stays():
    def both(t):
        y = t.to(torch.bfloat16)
        return torch.relu(y), y * 2

    assert move_relus_before_roundings(_cuda_graph(both)) == 0
    widening = _cuda_graph(lambda t: torch.relu(t.to(torch.float32)), torch.bfloat16)
    assert move_relus_before_roundings(widening) == 0
    # Torch's CPU relu keeps -0.0: there the two orders differ (see the pass).
    on_cpu = aten_graph(lambda t: torch.relu(t.to(torch.bfloat16)), torch.randn(4))
    assert move_relus_before_roundings(on_cpu) == 0


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_compiled_relu_of_a_rounding_has_eagers_bits(dtype):
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    x = torch.randn(4096, device="cuda") * 3
    specials = [float("nan"), float("inf"), float("-inf"), 0.0, -0.0, -1e-40, 1e-40, -3e38]
    x[: len(specials)] = torch.tensor(specials)

    def fn(t):
        return torch.relu((t * 1.0).to(dtype))

    got, want = torch.compile(fn, backend="nvfuse")(x), fn(x)
    assert torch.equal(got.isnan(), want.isnan())
    assert torch.equal(got.view(torch.int16)[~got.isnan()], want.view(torch.int16)[~want.isnan()])
