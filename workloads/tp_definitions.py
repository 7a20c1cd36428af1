"""The tensor-parallel blocks tp_blocks.py times: each as an nvfuse
definition with sharding annotations, and as the torch module DTensor's
tensor parallelism runs.

- MLP (seed 003): column-parallel linear (+bias) -> GELU -> row-parallel
  linear; one Allreduce.
- MLP backward, written out as a definition (grad_x, grad_w0, grad_b0,
  grad_w1 from x, the weights, the saved pre-activation h and grad_out);
  one Allreduce, for grad_x.
- Attention block: column-parallel qkv projection whose rows are
  head-major ([H, q|k|v, Dh], so a device's rows are whole heads), reshape
  into heads, causal flash attention, reshape back, row-parallel output
  projection; one Allreduce.
- Attention backward, written out as a definition (grad_x, grad_w_qkv,
  grad_w_out from x, the weights, the forward's saved projection,
  attention output, logsumexp, seed and offset, and grad_out); one
  Allreduce, for grad_x.
"""

import math

import torch
import torch.nn.functional as F

from nvfuse import DataType, FusionDefinition, ParallelType
from nvfuse.multidevice import DeviceMesh
from nvfuse.pytorch_utils import torch_dtype_to_nvfuse_dtype

BIG = 1 << 40  # a slice end past any extent


def _shard(t, axis, d):
    t.set_device_mesh(DeviceMesh(torch.arange(d)))
    t.outer_split(axis, d)
    t.axis(axis).parallelize(ParallelType.mesh_x)


def _gelu(fd, h):
    return fd.ops.mul(
        fd.ops.mul(h, 0.5), fd.ops.add(fd.ops.erf(fd.ops.mul(h, 1 / math.sqrt(2))), 1.0)
    )


def _gelu_grad(fd, h):
    """d gelu / dh = Phi(h) + h * phi(h)."""
    cdf = fd.ops.mul(fd.ops.add(fd.ops.erf(fd.ops.mul(h, 1 / math.sqrt(2))), 1.0), 0.5)
    pdf = fd.ops.mul(fd.ops.exp(fd.ops.mul(fd.ops.mul(h, h), -0.5)), 1 / math.sqrt(2 * math.pi))
    return fd.ops.add(cdf, fd.ops.mul(h, pdf))


def mlp_forward(tokens, hidden, dtype, d, save=False, sequence_parallel=False):
    """Inputs x, w0, b0, w1; outputs out, and with `save` what the backward
    reads, as torch's autograd saves it: h (the pre-activation) and g (the
    activation). With `sequence_parallel`, x and out are sharded on their
    tokens: the up projection all-gathers them and the down projection
    reduce-scatters them, both as pipelined loops that overlap the
    communication with the GEMM."""
    nv = torch_dtype_to_nvfuse_dtype(dtype)
    with FusionDefinition() as fd:
        x = fd.define_tensor((tokens, hidden), contiguity=True, dtype=nv)
        w0 = fd.define_tensor((4 * hidden, hidden), contiguity=True, dtype=nv)
        b0 = fd.define_tensor((4 * hidden,), contiguity=True, dtype=nv)
        w1 = fd.define_tensor((hidden, 4 * hidden), contiguity=True, dtype=nv)
        h = fd.ops.linear(x, w0, b0)
        g = fd.ops.cast(_gelu(fd, fd.ops.cast(h, DataType.Float)), nv)
        out = fd.ops.linear(g, w1)
        fd.add_output(out)
        if save:
            fd.add_output(h)
            fd.add_output(g)
        if sequence_parallel:
            _shard(x, 0, d)
            _shard(out, 0, d)
        else:
            x.set_device_mesh(DeviceMesh(torch.arange(d)))
        _shard(w0, 0, d)
        _shard(w1, 1, d)
    return fd, (x, w0, b0, w1)


def mlp_backward(tokens, hidden, dtype, d):
    """Inputs x, w0, w1, h, g, grad_out; outputs grad_x, grad_w0, grad_b0,
    grad_w1. grad_x's partial sums need the Allreduce; the weight gradients
    do not wait for it and run while it is in flight."""
    nv = torch_dtype_to_nvfuse_dtype(dtype)
    with FusionDefinition() as fd:
        x = fd.define_tensor((tokens, hidden), contiguity=True, dtype=nv)
        w0 = fd.define_tensor((4 * hidden, hidden), contiguity=True, dtype=nv)
        w1 = fd.define_tensor((hidden, 4 * hidden), contiguity=True, dtype=nv)
        h = fd.define_tensor((tokens, 4 * hidden), contiguity=True, dtype=nv)
        g = fd.define_tensor((tokens, 4 * hidden), contiguity=True, dtype=nv)
        grad_out = fd.define_tensor((tokens, hidden), contiguity=True, dtype=nv)
        grad_g = fd.ops.cast(fd.ops.matmul(grad_out, w1), DataType.Float)
        grad_h = fd.ops.cast(fd.ops.mul(grad_g, _gelu_grad(fd, fd.ops.cast(h, DataType.Float))), nv)
        fd.add_output(fd.ops.matmul(grad_h, w0))
        fd.add_output(fd.ops.matmul(fd.ops.permute(grad_h, [1, 0]), x))
        fd.add_output(fd.ops.cast(fd.ops.sum(fd.ops.cast(grad_h, DataType.Float), [0]), nv))
        fd.add_output(fd.ops.matmul(fd.ops.permute(grad_out, [1, 0]), g))
        mesh = DeviceMesh(torch.arange(d))
        x.set_device_mesh(mesh)
        grad_out.set_device_mesh(mesh)
        _shard(w0, 0, d)
        _shard(w1, 1, d)
        _shard(h, 1, d)
        _shard(g, 1, d)
    return fd, (x, w0, w1, h, g, grad_out)


class Mlp(torch.nn.Module):
    def __init__(self, w0, b0, w1):
        super().__init__()
        self.up = torch.nn.Linear(w0.shape[1], w0.shape[0])
        self.down = torch.nn.Linear(w1.shape[1], w1.shape[0], bias=False)
        with torch.no_grad():
            self.up.weight.copy_(w0)
            self.up.bias.copy_(b0)
            self.down.weight.copy_(w1)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


def heads_of(fd, qkv, head_dim):
    """q, k, v as [B, H, S, Dh] from the head-major [B, S, H, 3Dh]."""
    parts = []
    for i in range(3):
        part = fd.ops.slice(qkv, [0, 0, 0, i * head_dim], [BIG, BIG, BIG, (i + 1) * head_dim])
        parts.append(fd.ops.permute(part, [0, 2, 1, 3]))
    return parts


def attention_forward(batch, seq, heads, head_dim, dtype, d, save=False):
    """Inputs x [B, S, E], w_qkv [3E, E] (head-major rows), w_out [E, E];
    outputs out, and with `save` what the backward reads, as autograd saves
    it: the projection qkv [B, S, 3E], the attention output [B, H, S, Dh],
    its logsumexp and the philox seed and offset."""
    nv = torch_dtype_to_nvfuse_dtype(dtype)
    e = heads * head_dim
    with FusionDefinition() as fd:
        x = fd.define_tensor((batch, seq, e), contiguity=True, dtype=nv)
        w_qkv = fd.define_tensor((3 * e, e), contiguity=True, dtype=nv)
        w_out = fd.define_tensor((e, e), contiguity=True, dtype=nv)
        projected = fd.ops.linear(x, w_qkv)
        qkv = fd.ops.reshape(projected, [batch, seq, heads, 3 * head_dim])
        attn, lse, seed, offset = fd.ops.sdpfa_fwd(
            *heads_of(fd, qkv, head_dim), dropout_p=0.0, is_causal=True
        )
        merged = fd.ops.reshape(fd.ops.permute(attn, [0, 2, 1, 3]), [batch, seq, e])
        fd.add_output(fd.ops.linear(merged, w_out))
        if save:
            for t in (projected, attn, lse, seed, offset):
                fd.add_output(t)
        x.set_device_mesh(DeviceMesh(torch.arange(d)))
        _shard(w_qkv, 0, d)
        _shard(w_out, 1, d)
    return fd, (x, w_qkv, w_out)


def attention_backward(batch, seq, heads, head_dim, dtype, d):
    """Inputs x, w_qkv, w_out, the forward's saved qkv, attention output,
    logsumexp, seed and offset, and grad_out [B, S, E]; outputs grad_x,
    grad_w_qkv, grad_w_out. Heads stay on their device: the output
    projection's input gradient and the flash-attention backward are
    local, grad_x's partial sums over this device's heads need the one
    Allreduce, and the weight gradients run while it is in flight."""
    nv = torch_dtype_to_nvfuse_dtype(dtype)
    e = heads * head_dim
    tokens = batch * seq
    with FusionDefinition() as fd:
        x = fd.define_tensor((batch, seq, e), contiguity=True, dtype=nv)
        w_qkv = fd.define_tensor((3 * e, e), contiguity=True, dtype=nv)
        w_out = fd.define_tensor((e, e), contiguity=True, dtype=nv)
        projected = fd.define_tensor((batch, seq, 3 * e), contiguity=True, dtype=nv)
        attn = fd.define_tensor((batch, heads, seq, head_dim), contiguity=True, dtype=nv)
        lse = fd.define_tensor((batch, heads, seq), contiguity=True, dtype=DataType.Float)
        seed = fd.define_tensor((2,), contiguity=True, dtype=DataType.UInt64)
        offset = fd.define_tensor((), dtype=DataType.UInt64)
        grad_out = fd.define_tensor((batch, seq, e), contiguity=True, dtype=nv)
        grad_out2 = fd.ops.reshape(grad_out, [tokens, e])
        merged = fd.ops.reshape(fd.ops.permute(attn, [0, 2, 1, 3]), [tokens, e])
        grad_merged = fd.ops.matmul(grad_out2, w_out)
        grad_attn = fd.ops.permute(
            fd.ops.reshape(grad_merged, [batch, seq, heads, head_dim]), [0, 2, 1, 3]
        )
        qkv = fd.ops.reshape(projected, [batch, seq, heads, 3 * head_dim])
        grads = fd.ops.sdpfa_bwd(
            grad_attn, *heads_of(fd, qkv, head_dim), attn, lse, 0.0, True, seed, offset
        )
        grad_qkv = fd.ops.reshape(
            fd.ops.cat([fd.ops.permute(g, [0, 2, 1, 3]) for g in grads], -1), [tokens, 3 * e]
        )
        grad_x = fd.ops.matmul(grad_qkv, w_qkv)
        fd.add_output(fd.ops.reshape(grad_x, [batch, seq, e]))
        x2 = fd.ops.reshape(x, [tokens, e])
        fd.add_output(fd.ops.matmul(fd.ops.permute(grad_qkv, [1, 0]), x2))
        fd.add_output(fd.ops.matmul(fd.ops.permute(grad_out2, [1, 0]), merged))
        mesh = DeviceMesh(torch.arange(d))
        for t in (x, grad_out, seed, offset):
            t.set_device_mesh(mesh)
        _shard(w_qkv, 0, d)
        _shard(w_out, 1, d)
        _shard(projected, 2, d)
        _shard(attn, 1, d)
        _shard(lse, 1, d)
    return fd, (x, w_qkv, w_out, projected, attn, lse, seed, offset, grad_out)


class Attention(torch.nn.Module):
    """The same block for DTensor: after ColwiseParallel the qkv projection
    gives this device's heads, after RowwiseParallel the output projection
    is allreduced."""

    def __init__(self, w_qkv, w_out, head_dim):
        super().__init__()
        self.head_dim = head_dim
        self.qkv = torch.nn.Linear(w_qkv.shape[1], w_qkv.shape[0], bias=False)
        self.out = torch.nn.Linear(w_out.shape[1], w_out.shape[0], bias=False)
        with torch.no_grad():
            self.qkv.weight.copy_(w_qkv)
            self.out.weight.copy_(w_out)

    def forward(self, x):
        b, s, _ = x.shape
        qkv = self.qkv(x).view(b, s, -1, 3 * self.head_dim)
        q, k, v = (t.permute(0, 2, 1, 3) for t in qkv.split(self.head_dim, dim=-1))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.permute(0, 2, 1, 3).reshape(b, s, -1))
