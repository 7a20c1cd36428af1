"""Chains of views folded into one as_strided (passes/view_chains.py): the
rewrite and its values on traced graphs, the chains it leaves (from a
convolution, through a view read twice, across an offset-changing view),
and a compiled network whose 1x1 convolutions' view chains become single
calls, against eager, forward and backward."""

import torch
from torch.fx.experimental.proxy_tensor import make_fx

import nvfuse.dynamo  # noqa: F401 (registers the backend)
from nvfuse.dynamo import pipeline
from nvfuse.dynamo.passes.view_chains import fold_view_chains

aten = torch.ops.aten


def _targets(gm):
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


def _check_values(gm, fn, *inputs):
    for got, want in zip(gm(*inputs), fn(*inputs)):
        assert got.shape == want.shape and got.stride() == want.stride()
        assert torch.equal(got, want)


def test_a_chain_from_a_graph_input_becomes_one_as_strided():
    def fn(x, w):
        rows = aten.view.default(aten.permute.default(x, [0, 2, 3, 1]), [32, 4])
        weight = aten.t.default(aten.view.default(w, [6, 4]))
        y = aten.mm.default(rows, weight)
        return (aten.permute.default(aten.view.default(y, [2, 4, 4, 6]), [0, 3, 1, 2]),)

    x = torch.randn(2, 4, 4, 4).contiguous(memory_format=torch.channels_last)
    w = torch.randn(6, 4, 1, 1)
    gm = make_fx(fn)(x, w)
    assert fold_view_chains(gm, [x, w])
    assert _targets(gm) == [aten.as_strided.default] * 2 + [
        aten.mm.default,
        aten.as_strided.default,
    ]
    _check_values(gm, fn, x, w)


def test_chains_from_other_ops_through_shared_views_and_offsets_stay():
    def fn(x, w, z):
        y = aten.convolution.default(x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
        from_convolution = aten.view.default(aten.permute.default(y, [0, 2, 3, 1]), [32, 6])
        shared = aten.permute.default(x, [0, 2, 3, 1])
        offset = aten.view.default(aten.select.int(z, 0, 1), [64])
        return from_convolution, shared, aten.view.default(shared, [128]), offset

    x = torch.randn(2, 4, 4, 4).contiguous(memory_format=torch.channels_last)
    w = torch.randn(6, 4, 1, 1)
    z = torch.randn(2, 8, 8)
    gm = make_fx(fn)(x, w, z)
    before = _targets(gm)
    assert not fold_view_chains(gm, [x, w, z])
    assert _targets(gm) == before


def test_an_input_laid_out_otherwise_than_its_meta_value_says_starts_no_chain():
    """A backward's meta values can describe the layout its saved
    activations had before the forward changed it: only inputs whose
    example value has the meta's strides are trusted."""

    def fn(x):
        return (aten.view.default(aten.permute.default(x, [0, 2, 3, 1]), [32, 4]),)

    x = torch.randn(2, 4, 4, 4).contiguous(memory_format=torch.channels_last)
    gm = make_fx(fn)(x)
    assert not fold_view_chains(gm, [torch.randn(2, 4, 4, 4)])
    assert fold_view_chains(gm, [x])


def test_a_view_of_a_shared_view_folds_from_it():
    def fn(x):
        shared = aten.permute.default(x, [1, 0])
        return shared, aten.view.default(aten.unsqueeze.default(shared, 0), [1, 12, 4])

    x = torch.randn(4, 12)
    gm = make_fx(fn)(x)
    assert fold_view_chains(gm, [x])
    assert _targets(gm) == [aten.permute.default, aten.as_strided.default]
    _check_values(gm, fn, x)


def test_a_compiled_network_with_pixel_convolutions_matches_eager(monkeypatch):
    codes = []
    boxed = pipeline._boxed

    def keeping_code(graph_module):
        codes.append(graph_module.code)
        return boxed(graph_module)

    monkeypatch.setattr(pipeline, "_boxed", keeping_code)
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(8, 16, 1, bias=False),
        torch.nn.BatchNorm2d(16),
        torch.nn.ReLU(),
        torch.nn.Conv2d(16, 8, 1, bias=False),
    )
    x = torch.randn(2, 8, 6, 6, requires_grad=True)
    compiled = torch.compile(model, backend="nvfuse", options={"channels_last": True})
    got = compiled(x)
    got.sum().backward()
    grads = [x.grad.clone()] + [p.grad.clone() for p in model.parameters()]
    x.grad = None
    model.zero_grad()
    want = model(x)
    want.sum().backward()
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    for g, p in zip(grads, [x] + list(model.parameters())):
        torch.testing.assert_close(g, p.grad, rtol=1e-4, atol=1e-4)
    # The image's copy into channels-last, both 1x1 weights and both
    # results: one call each.
    forward = codes[0]
    assert forward.count(".as_strided(") == 6
    assert ".view(" not in forward and ".permute(" not in forward
