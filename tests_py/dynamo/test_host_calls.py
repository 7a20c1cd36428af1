"""The ATen calls left between regions, respelled as Tensor methods and
torch functions (passes/host_calls.py): the same ops, the same results,
cheaper calls. Checked on the CPU."""

import torch

import nvfuse.dynamo  # noqa: F401 (registers the backend)
from nvfuse.dynamo.passes.host_calls import respell_host_calls

from .conftest import aten_graph

aten = torch.ops.aten


def _views_and_gemms(x, w, b, batch):
    y = torch.addmm(b, x.view(4, 6).t().contiguous().view(6, 4), w)
    z = torch.bmm(batch.transpose(1, 2), batch).unsqueeze(0).squeeze(0)
    return y.permute(1, 0).expand(2, 5, 6), torch.mm(y.t(), y).select(0, 1), z[1].squeeze()


def _inputs():
    torch.manual_seed(0)
    return torch.randn(2, 12), torch.randn(4, 5), torch.randn(5), torch.randn(3, 4, 2)


def test_respelled_graph_computes_what_the_aten_graph_does():
    inputs = _inputs()
    gm = aten_graph(_views_and_gemms, *inputs)
    expected = gm(*inputs)
    targets_before = {n.target for n in gm.graph.nodes if n.op == "call_function"}
    assert {aten.view.default, aten.permute.default, aten.mm.default} <= targets_before
    assert respell_host_calls(gm)
    left = {n.target for n in gm.graph.nodes if n.op == "call_function"}
    assert not left & {aten.view.default, aten.permute.default, aten.t.default, aten.mm.default}
    assert {"view", "permute", "expand"} <= {
        n.target for n in gm.graph.nodes if n.op == "call_method"
    }
    for got, want in zip(gm(*inputs), expected):
        assert got.stride() == want.stride()
        torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_backend_graphs_call_no_aten_view_between_regions(monkeypatch):
    from nvfuse.dynamo import pipeline

    graphs = []
    boxed = pipeline._boxed
    monkeypatch.setattr(pipeline, "_boxed", lambda gm: graphs.append(gm) or boxed(gm))

    class Attention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = torch.nn.Linear(8, 24)

        def forward(self, x):
            q, k, v = self.qkv(x).view(2, 3, 3, 8).unbind(2)
            return torch.softmax(q @ k.transpose(1, 2), -1) @ v

    torch.manual_seed(0)
    model = Attention()
    x = torch.randn(2, 3, 8, requires_grad=True)
    x_ref = x.detach().clone().requires_grad_()
    got = torch.compile(model, backend="nvfuse")(x)
    got.sum().backward()
    expected = model(x_ref)
    expected.sum().backward()
    torch.testing.assert_close(got, expected)
    torch.testing.assert_close(x.grad, x_ref.grad)
    assert [gm for gm in graphs if any(n.op == "call_method" for n in gm.graph.nodes)]
    for gm in graphs:
        targets = {n.target for n in gm.graph.nodes if n.op == "call_function"}
        assert not targets & {aten.view.default, aten.permute.default, aten.bmm.default}
