"""Small model blocks for the torch.compile tests and benchmarks: an MLP
with layer norm, a GPT-2 block, a Llama block (RMSNorm, RoPE, SwiGLU,
causal attention), and a language-model head with cross-entropy."""

import torch
import torch.nn.functional as F
from torch import nn


class MLP(nn.Module):
    def __init__(self, width=64, hidden=256):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, hidden)
        self.down = nn.Linear(hidden, width)

    def forward(self, x):
        return x + self.down(F.gelu(self.up(self.norm(x))))


class GPT2Block(nn.Module):
    def __init__(self, width=64, heads=4, dropout=0.0):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(width)
        self.attn = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln_2 = nn.LayerNorm(width)
        self.fc = nn.Linear(width, 4 * width)
        self.fc_proj = nn.Linear(4 * width, width)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.attn(self.ln_1(x)).split(c, dim=2)
        q, k, v = (y.view(b, t, self.heads, c // self.heads).transpose(1, 2) for y in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.dropout(self.proj(y.transpose(1, 2).reshape(b, t, c)))
        return x + self.dropout(self.fc_proj(F.gelu(self.fc(self.ln_2(x)), approximate="tanh")))


class RMSNorm(nn.Module):
    def __init__(self, width, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(width))

    def forward(self, x):
        x32 = x.float()
        normed = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return normed.to(x.dtype) * self.weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rope(x, cos, sin):
    return x * cos + rotate_half(x) * sin


class LlamaBlock(nn.Module):
    def __init__(self, width=64, heads=4, hidden=172, max_positions=512):
        super().__init__()
        self.heads = heads
        self.head_dim = width // heads
        self.attn_norm = RMSNorm(width)
        self.q = nn.Linear(width, width, bias=False)
        self.k = nn.Linear(width, width, bias=False)
        self.v = nn.Linear(width, width, bias=False)
        self.o = nn.Linear(width, width, bias=False)
        self.mlp_norm = RMSNorm(width)
        self.gate = nn.Linear(width, hidden, bias=False)
        self.up = nn.Linear(width, hidden, bias=False)
        self.down = nn.Linear(hidden, width, bias=False)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, self.head_dim, 2).float() / self.head_dim))
        angles = torch.outer(torch.arange(max_positions).float(), inv_freq)
        angles = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    def forward(self, x):
        b, t, c = x.shape
        h = self.attn_norm(x)
        q, k, v = (
            proj(h).view(b, t, self.heads, self.head_dim).transpose(1, 2)
            for proj in (self.q, self.k, self.v)
        )
        cos, sin = self.cos[:t].to(x.dtype), self.sin[:t].to(x.dtype)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(y.transpose(1, 2).reshape(b, t, c))
        h = self.mlp_norm(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class LMHeadLoss(nn.Module):
    """Final norm, vocabulary projection and cross-entropy."""

    def __init__(self, width=64, vocab=512):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)

    def forward(self, x, targets):
        logits = self.head(self.norm(x))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]).float(), targets.view(-1))
