"""Small models of the shapes Lightning Thunder hands its nvFuser executor,
each with example inputs; used by the Thunder client tests and by
tools/thunder_report.py. Plain torch: nothing here imports nvfuse."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class LayerNormMlp(nn.Module):
    """ln2(x + fc2(gelu(ln1(fc1(x))))): two fusions in the forward (bias +
    layer norm + GELU, residual + layer norm)."""

    def __init__(self, width=256, hidden=1024):
        super().__init__()
        self.fc1 = nn.Linear(width, hidden)
        self.ln1 = nn.LayerNorm(hidden)
        self.fc2 = nn.Linear(hidden, width)
        self.ln2 = nn.LayerNorm(width)

    def forward(self, x):
        return self.ln2(x + self.fc2(F.gelu(self.ln1(self.fc1(x)))))


class CausalSelfAttention(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, t, c))


class GptBlock(nn.Module):
    """A GPT-2 block: pre-norm attention and GELU MLP with residuals."""

    def __init__(self, width=256, heads=4):
        super().__init__()
        self.ln1 = nn.LayerNorm(width)
        self.attn = CausalSelfAttention(width, heads)
        self.ln2 = nn.LayerNorm(width)
        self.fc = nn.Linear(width, 4 * width)
        self.out = nn.Linear(4 * width, width)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class CrossEntropyHead(nn.Module):
    """A vocabulary projection and its cross-entropy loss."""

    def __init__(self, width=256, vocab=1000):
        super().__init__()
        self.head = nn.Linear(width, vocab, bias=False)

    def forward(self, x, target):
        return F.cross_entropy(self.head(x), target)


class DropoutResidual(nn.Module):
    def __init__(self, width=256):
        super().__init__()
        self.fc = nn.Linear(width, width)

    def forward(self, x):
        return x + F.dropout(self.fc(x), p=0.1, training=True)


class RmsNorm(nn.Module):
    def __init__(self, width, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))
        self.eps = eps

    def forward(self, x):
        xf = x.float()
        y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return (y * self.weight.float()).to(x.dtype)


def rope_tables(t, head_dim, device, dtype):
    inv = 1.0 / (10000 ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
    angles = torch.outer(torch.arange(t, device=device).float(), inv)
    angles = torch.cat([angles, angles], dim=-1)
    return angles.cos().to(dtype), angles.sin().to(dtype)


def apply_rope(x, cos, sin):
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


class LlamaBlock(nn.Module):
    """RMSNorm, attention with RoPE, SwiGLU MLP."""

    def __init__(self, width=256, heads=4, hidden=688):
        super().__init__()
        self.heads = heads
        self.norm1 = RmsNorm(width)
        self.qkv = nn.Linear(width, 3 * width, bias=False)
        self.o = nn.Linear(width, width, bias=False)
        self.norm2 = RmsNorm(width)
        self.gate = nn.Linear(width, hidden, bias=False)
        self.up = nn.Linear(width, hidden, bias=False)
        self.down = nn.Linear(hidden, width, bias=False)

    def forward(self, x, cos, sin):
        b, t, c = x.shape
        h = self.norm1(x)
        q, k, v = self.qkv(h).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(y.transpose(1, 2).reshape(b, t, c))
        h = self.norm2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


def make_case(name, dtype, device="cuda"):
    """(model, example inputs) of case `name`, seeded."""
    torch.manual_seed(0)
    if name == "mlp_layer_norms":
        model = LayerNormMlp()
        inputs = (torch.randn(64, 256),)
    elif name == "gpt_block":
        model = GptBlock()
        inputs = (torch.randn(4, 128, 256),)
    elif name == "cross_entropy_head":
        model = CrossEntropyHead()
        inputs = (torch.randn(512, 256), torch.randint(0, 1000, (512,)))
    elif name == "dropout":
        model = DropoutResidual()
        inputs = (torch.randn(512, 256),)
    elif name == "llama_block":
        model = LlamaBlock()
        x = torch.randn(2, 128, 256)
        cos, sin = rope_tables(128, 64, "cpu", torch.float32)
        inputs = (x, cos, sin)
    else:
        raise ValueError(f"unknown case {name}")
    model = model.to(device=device, dtype=dtype)
    inputs = tuple(
        t.to(device=device, dtype=dtype) if t.is_floating_point() else t.to(device) for t in inputs
    )
    return model, inputs


CASES = ["mlp_layer_norms", "gpt_block", "cross_entropy_head", "dropout", "llama_block"]


def tolerance(dtype):
    return {torch.float32: (1e-4, 1e-4), torch.bfloat16: (3e-2, 3e-2)}[dtype]


def relative_error(a, b):
    a, b = a.double(), b.double()
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()
