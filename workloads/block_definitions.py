"""Transformer blocks as frameworks write them for a fusion compiler, with
their torch references: the MLP (linear -> bias + tanh-GELU -> linear) and
causal self-attention (qkv linear, split, heads permuted, flash attention,
permuted back, output linear). Used by the tests and the benchmarks."""

import torch

from nvfuse import DataType, FusionDefinition

TORCH_TO_NVFUSE = {torch.bfloat16: DataType.BFloat16, torch.float16: DataType.Half}
BIG = 1 << 40  # a slice end past any extent


def mlp_inputs(tokens, dim, dtype, device):
    scale = dim**-0.5
    return [
        torch.randn(tokens, dim, dtype=dtype, device=device),
        torch.randn(4 * dim, dim, dtype=dtype, device=device) * scale,
        torch.randn(4 * dim, dtype=dtype, device=device) * 0.1,
        torch.randn(dim, 4 * dim, dtype=dtype, device=device) * scale / 2,
        torch.randn(dim, dtype=dtype, device=device) * 0.1,
    ]


def mlp_torch(x, w1, b1, w2, b2):
    hidden = torch.nn.functional.gelu(
        torch.nn.functional.linear(x, w1, b1).float(), approximate="tanh"
    )
    return torch.nn.functional.linear(hidden.to(x.dtype), w2, b2)


def mlp_fd(dtype):
    nv = TORCH_TO_NVFUSE[dtype]
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True, dtype=nv)
        w1 = fd.define_tensor([-1, -1], contiguity=True, dtype=nv)
        b1 = fd.define_tensor([-1], contiguity=True, dtype=nv)
        w2 = fd.define_tensor([-1, -1], contiguity=True, dtype=nv)
        b2 = fd.define_tensor([-1], contiguity=True, dtype=nv)
        h = fd.ops.cast(fd.ops.linear(x, w1, b1), DataType.Float)
        inner = (h + h * h * h * 0.044715) * 0.7978845608028654
        gelu = h * 0.5 * (fd.ops.tanh(inner) + 1.0)
        fd.add_output(fd.ops.linear(fd.ops.cast(gelu, nv), w2, b2))
    return fd


def attention_inputs(batch, seq, heads, head_dim, dtype, device):
    dim = heads * head_dim
    scale = dim**-0.5
    return [
        torch.randn(batch, seq, dim, dtype=dtype, device=device),
        torch.randn(3 * dim, dim, dtype=dtype, device=device) * scale,
        torch.randn(3 * dim, dtype=dtype, device=device) * 0.1,
        torch.randn(dim, dim, dtype=dtype, device=device) * scale,
        torch.randn(dim, dtype=dtype, device=device) * 0.1,
    ]


def attention_torch(x, w_qkv, b_qkv, w_out, b_out, heads):
    batch, seq, dim = x.shape
    q, k, v = torch.nn.functional.linear(x, w_qkv, b_qkv).split(dim, dim=-1)

    def to_heads(t):
        return t.reshape(batch, seq, heads, dim // heads).permute(0, 2, 1, 3)

    if x.is_cuda:
        y = torch.nn.functional.scaled_dot_product_attention(
            to_heads(q), to_heads(k), to_heads(v), is_causal=True
        )
    else:  # the math in float on the CPU
        y = torch.nn.functional.scaled_dot_product_attention(
            to_heads(q).float(), to_heads(k).float(), to_heads(v).float(), is_causal=True
        ).to(x.dtype)
    y = y.permute(0, 2, 1, 3).reshape(batch, seq, dim)
    return torch.nn.functional.linear(y, w_out, b_out)


def attention_fd(batch, seq, heads, head_dim, dtype):
    nv = TORCH_TO_NVFUSE[dtype]
    dim = heads * head_dim
    with FusionDefinition() as fd:
        x = fd.define_tensor([batch, seq, dim], contiguity=True, dtype=nv)
        w_qkv = fd.define_tensor([3 * dim, dim], contiguity=True, dtype=nv)
        b_qkv = fd.define_tensor([3 * dim], contiguity=True, dtype=nv)
        w_out = fd.define_tensor([dim, dim], contiguity=True, dtype=nv)
        b_out = fd.define_tensor([dim], contiguity=True, dtype=nv)
        qkv = fd.ops.linear(x, w_qkv, b_qkv)
        heads_of = []
        for i in range(3):
            part = fd.ops.slice(qkv, [0, 0, i * dim], [BIG, BIG, (i + 1) * dim])
            part = fd.ops.reshape(part, [batch, seq, heads, head_dim])
            heads_of.append(fd.ops.permute(part, [0, 2, 1, 3]))
        y, _, _, _ = fd.ops.sdpfa_fwd(*heads_of, dropout_p=0.0, is_causal=True)
        y = fd.ops.reshape(fd.ops.permute(y, [0, 2, 1, 3]), [batch, seq, dim])
        fd.add_output(fd.ops.linear(y, w_out, b_out))
    return fd
