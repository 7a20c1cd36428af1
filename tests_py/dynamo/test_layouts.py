"""Where a region's outputs meet the rest of the graph: each has the
sizes and strides its FX meta value promised (layouts.py)."""

import pytest
import torch
import torch.nn.functional as F

import nvfuse.dynamo
from nvfuse.dynamo.layouts import OutputLayout, stride_order_of


def test_stride_order_of_row_major_is_given_in_full():
    assert stride_order_of(torch.empty(2, 3, 4)) == [2, 1, 0]
    assert stride_order_of(torch.empty(2, 3, 4).permute(0, 2, 1)) == [2, 0, 1]
    assert stride_order_of(torch.empty(())) is None


def test_an_expanded_output_is_not_accepted_where_torch_materialized_it():
    layout = OutputLayout(torch.empty(2, 2, 2, 16, 32))
    expanded = torch.randn(2, 2, 1, 16, 32).expand(2, 2, 2, 16, 32)
    assert not layout.accepts(expanded)
    conformed = layout.conform(expanded)
    assert conformed.stride() == (2048, 1024, 512, 32, 1)
    assert torch.equal(conformed, expanded)


def test_a_dense_output_in_the_promised_order_is_accepted():
    layout = OutputLayout(torch.empty(4, 6).t())
    assert layout.accepts(torch.empty(4, 6).t())
    assert not layout.accepts(torch.empty(6, 4))
    assert layout.conform(torch.arange(24.0).view(6, 4)).stride() == (1, 6)


def _repeat_kv(k, times):
    """The grouped-query attention pattern of Llama-family models: keys
    expanded over a new axis, cloned, then viewed."""
    b, h, t, d = k.shape
    return k[:, :, None].expand(b, h, times, t, d).reshape(b, h * times, t, d)


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_an_expanded_clone_feeds_a_view(device):
    def attention_keys(k, q):
        keys = _repeat_kv(k * 2.0, 2)
        scores = q @ keys.transpose(-1, -2)
        return scores.view(scores.shape[0], -1).softmax(-1)

    k = torch.randn(2, 2, 16, 32, device=device)
    q = torch.randn(2, 4, 16, 32, device=device)
    got = torch.compile(attention_keys, backend="nvfuse")(k, q)
    torch.testing.assert_close(got, attention_keys(k, q))


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_outputs_have_the_strides_of_their_meta_values(device):
    def f(x, y):
        a = (x * 2).transpose(0, 1).contiguous()
        b = (y + 1)[:, None].expand(4, 3, 5).clone()
        return a.view(-1), b.view(4, 15), F.relu(x).t()

    x, y = torch.randn(6, 5, device=device), torch.randn(4, 5, device=device)
    got = torch.compile(f, backend="nvfuse")(x, y)
    for g, w in zip(got, f(x, y)):
        assert g.stride() == w.stride()
        torch.testing.assert_close(g, w)
    assert nvfuse.dynamo.reports()[0].fusions


@pytest.mark.gpu
def test_a_region_reading_only_cpu_scalars_runs_on_the_outputs_device():
    # T5's position bias: positions from arange on the GPU, scaled by a CPU
    # scalar constant; the region reads no CUDA tensor.
    def f(x):
        positions = torch.arange(16, device="cuda", dtype=torch.float32)
        scaled = (positions * torch.tensor(0.5)).exp().view(4, 4)
        return x @ scaled

    x = torch.randn(4, 4, device="cuda")
    got = torch.compile(f, backend="nvfuse")(x)
    torch.testing.assert_close(got, f(x))
