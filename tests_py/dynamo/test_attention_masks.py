"""Constant attention masks (computed from no graph input) that admit
every key, or exactly the causal ones, are dropped from the attention call
on Dynamo's graph (attention_masks.py); other masks stay."""

import pytest
import torch
import torch.nn.functional as F

import nvfuse.dynamo  # noqa: F401 (registers backend="nvfuse")
from nvfuse.dynamo.attention_masks import drop_constant_masks

B, H, N, D = 2, 2, 16, 8


def _attention_calls(gm):
    return [
        n
        for n in gm.graph.nodes
        if n.op == "call_function" and n.target is F.scaled_dot_product_attention
    ]


def _compiled_with_pass(fn, record):
    """fn compiled by a backend that runs the pass on Dynamo's graph,
    records (calls changed, [(mask, is_causal)] of each call after it) and
    runs the graph as it then is."""

    def backend(gm, example_inputs):
        changed = drop_constant_masks(gm)
        calls = [
            (n.kwargs.get("attn_mask"), n.kwargs.get("is_causal", False))
            for n in _attention_calls(gm)
        ]
        record.append((changed, calls))
        return gm.forward

    return torch.compile(fn, backend=backend)


def _qkv():
    g = torch.Generator().manual_seed(0)
    return [torch.randn(B, H, N, D, generator=g) for _ in range(3)]


def _all_true(q):
    positions = torch.arange(N, device=q.device)
    return (positions >= 0)[None, None, None, :].expand(B, 1, N, N)


def _causal_bool(q):
    positions = torch.arange(N, device=q.device)
    return (positions[:, None] >= positions[None, :])[None, None].expand(B, 1, N, N)


def _causal_additive(q):
    admitted = _causal_bool(q)
    zero = torch.zeros((), dtype=q.dtype, device=q.device)
    return torch.where(admitted, zero, torch.finfo(q.dtype).min)


def _one_key_masked(q):
    positions = torch.arange(N, device=q.device)
    return (positions != 3)[None, None, None, :].expand(B, 1, N, N)


def _random(q):
    return torch.rand(B, 1, N, N, device=q.device) > 0.5


@pytest.mark.parametrize(
    "make_mask, causal",
    [(_all_true, False), (_causal_bool, True), (_causal_additive, True)],
)
def test_constant_masks_that_admit_every_or_the_causal_keys_are_dropped(make_mask, causal):
    def attention(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=make_mask(q))

    record = []
    q, k, v = _qkv()
    out = _compiled_with_pass(attention, record)(q, k, v)
    assert record == [(1, [(None, causal)])]
    torch.testing.assert_close(out, attention(q, k, v))


def _masked_by_input(q, keep):
    return keep[:, None, None, :].expand(B, 1, N, N)


@pytest.mark.parametrize("make_mask", [_one_key_masked, _random, _masked_by_input])
def test_masks_that_mask_keys_or_are_not_constants_stay(make_mask):
    keep = torch.ones(B, N, dtype=torch.bool)

    def attention(q, k, v, keep):
        mask = make_mask(q, keep) if make_mask is _masked_by_input else make_mask(q)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    record = []
    q, k, v = _qkv()
    _compiled_with_pass(attention, record)(q, k, v, keep)
    ((changed, calls),) = record
    assert changed == 0 and calls[0][0] is not None


def test_a_vit_without_padding_runs_its_attention_unmasked():
    # transformers builds an all-true mask under torch.compile, where it
    # cannot look at the mask to skip it; each layer's call drops it.
    transformers = pytest.importorskip("transformers")
    config = transformers.ViTConfig(
        image_size=32,
        patch_size=8,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        attn_implementation="sdpa",
    )
    model = transformers.ViTModel(config).eval()
    pixels = torch.randn(2, 3, 32, 32)
    record = []
    with torch.no_grad():
        out = _compiled_with_pass(model, record)(pixel_values=pixels).last_hidden_state
        want = model(pixel_values=pixels).last_hidden_state
    changed, calls = record[0]
    assert changed == 2 and all(mask is None for mask, _ in calls), record
    torch.testing.assert_close(out, want)
    compiled = torch.compile(model, backend="nvfuse")
    with torch.no_grad():
        torch.testing.assert_close(
            compiled(pixel_values=pixels).last_hidden_state, want, rtol=1e-4, atol=1e-4
        )


def test_in_place_and_random_nodes_are_not_constants_but_logical_operators_are():
    import operator

    from nvfuse.dynamo.attention_masks import _is_constant_op

    graph = torch.fx.Graph()
    a = graph.call_function(torch.arange, (4,))
    b = graph.call_function(operator.and_, (a, a))
    c = graph.call_function(operator.iand, (a, a))
    d = graph.call_method("fill_", (a, 0))
    e = graph.call_function(torch.rand, (4,))
    f = graph.call_method("__getitem__", (a, 0))
    assert [_is_constant_op(n) for n in (a, b, c, d, e, f)] == [
        True,
        True,
        False,
        False,
        False,
        True,
    ]


def test_a_mask_whose_source_is_filled_in_place_elsewhere_stays():
    # The fill runs after the mask's nodes in the graph but before the
    # attention reads the mask's memory: evaluating the nodes alone would
    # not see it.
    def attention(q, k, v):
        admitted = torch.ones(B, 1, N, N, dtype=torch.bool, device=q.device)
        mask = admitted[:, :, :, :]
        admitted[:, :, :, 3].fill_(False)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    record = []
    q, k, v = _qkv()
    out = _compiled_with_pass(attention, record)(q, k, v)
    assert record[0][0] == 0
    torch.testing.assert_close(out, attention(q, k, v))
