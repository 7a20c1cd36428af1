"""Attention calls run on the backend torch picks for real tensors
(attention_backends.py): where that is cuDNN, Dynamo's call becomes ATen's
cuDNN attention before AOTAutograd traces it with fake tensors."""

import pytest
import torch
import torch.nn.functional as F

import nvfuse.dynamo  # noqa: F401 (registers backend="nvfuse")
from nvfuse.dynamo.attention_backends import attention_on_cudnn, cudnn_attention


def _rewriting_backend(counts):
    """A backend that runs the pass on Dynamo's graph, notes how many
    calls it rewrote, and runs the graph as it then is."""

    def backend(gm, example_inputs):
        counts.append(attention_on_cudnn(gm))
        counts.append(
            sum(n.op == "call_function" and n.target is cudnn_attention for n in gm.graph.nodes)
        )
        return gm.forward

    return backend


class _MaskedEncoderAttention(torch.nn.Module):
    """BERT's self-attention: projections, an additive [batch, 1, seq, seq]
    mask expanded from the padding mask, no dropout."""

    def __init__(self, width=128, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(width, 3 * width)

    def forward(self, x, keep):
        batch, seq, width = x.shape
        q, k, v = (
            t.view(batch, seq, self.heads, -1).transpose(1, 2) for t in self.qkv(x).split(width, -1)
        )
        mask = (1.0 - keep[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        mask = mask.expand(batch, 1, seq, seq)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return out.transpose(1, 2).reshape(batch, seq, width)


def _inputs(device, dtype):
    torch.manual_seed(0)
    x = torch.randn(4, 64, 128, device=device, dtype=dtype, requires_grad=True)
    keep = torch.ones(4, 64, device=device, dtype=torch.long)
    keep[1, 50:] = 0
    return x, keep


def test_calls_on_the_cpu_stay_as_they_are():
    module = _MaskedEncoderAttention()
    counts = []
    torch.compile(module, backend=_rewriting_backend(counts))(*_inputs("cpu", torch.float32))
    assert counts == [0, 0]


@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
def test_calls_torch_runs_on_cudnn_become_the_cudnn_op(causal):
    q, k, v = (
        torch.randn(4, 2, 64, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        for _ in range(3)
    )
    mask = None if causal else torch.zeros(4, 1, 64, 64, device="cuda", dtype=torch.bfloat16)
    expect_cudnn = torch._fused_sdp_choice(q, k, v, mask, 0.0, causal) == 3

    def attention(q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)

    counts = []
    out = torch.compile(attention, backend=_rewriting_backend(counts))(q, k, v, mask)
    assert counts == ([1, 1] if expect_cudnn else [0, 0])
    torch.testing.assert_close(out, attention(q, k, v, mask))


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["padded_keys", "expanded_along_keys"])
def test_a_boolean_mask_masks_as_torchs_cudnn_call_does(layout):
    """transformers' encoders pass a boolean [batch, 1, seq, seq] mask,
    expanded from the padding mask (for unpadded batches, with stride 0
    along the keys, which cuDNN takes once laid out densely)."""
    q, k, v = (torch.randn(4, 2, 64, 64, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    keep = torch.ones(4, 64, dtype=torch.bool, device="cuda")
    if layout == "padded_keys":
        keep[1, 50:] = False
        mask = keep[:, None, None, :].expand(4, 1, 64, 64)
    else:
        mask = keep[:, None, :, None].expand(4, 1, 64, 64)
    dense = torch.zeros(4, 1, 64, 64, dtype=torch.bfloat16, device="cuda")
    expect_cudnn = torch._fused_sdp_choice(q, k, v, dense) == 3

    def attention(q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    counts = []
    out = torch.compile(attention, backend=_rewriting_backend(counts))(q, k, v, mask)
    assert counts == ([1, 1] if expect_cudnn else [0, 0])
    torch.testing.assert_close(out, attention(q, k, v, mask), rtol=2e-2, atol=2e-2)


@pytest.mark.gpu
def test_calls_the_cudnn_op_cannot_take_stay_as_they_are():
    q, k, v = (torch.randn(4, 2, 64, 64, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    mask = torch.randn(4, 1, 64, 64, device="cuda")  # float32 against bf16

    def dropout(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)

    def other_dtype_mask(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    for fn in (dropout, other_dtype_mask):
        counts = []
        torch._dynamo.reset()
        torch.compile(fn, backend=_rewriting_backend(counts))(q, k, v)
        assert counts == [0, 0], fn.__name__


@pytest.mark.gpu
def test_masked_encoder_attention_trains_as_eager_does():
    """Values and gradients through backend="nvfuse" against eager, which
    runs the same backend torch picks for these tensors."""
    module = _MaskedEncoderAttention().cuda().bfloat16()
    x, keep = _inputs("cuda", torch.bfloat16)
    expected = module(x, keep)
    expected.float().square().sum().backward()
    grads = [x.grad.clone()] + [p.grad.clone() for p in module.parameters()]
    x.grad = None
    module.zero_grad()
    out = torch.compile(module, backend="nvfuse")(x, keep)
    out.float().square().sum().backward()
    torch.testing.assert_close(out, expected, rtol=2e-2, atol=2e-2)
    for got, want in zip([x.grad] + [p.grad for p in module.parameters()], grads):
        torch.testing.assert_close(got, want, rtol=5e-2, atol=5e-2)
