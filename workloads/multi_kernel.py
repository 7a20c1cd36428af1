"""Fusions of several generated kernels between ATen matmuls, with a
constant `c` in every kernel: a fresh constant (fresh_constant()) makes
kernels that no cache holds, which is what a new fusion's first call pays
for. Used by the compile-ahead tests and the first-call benchmark."""

import itertools
import time

import torch

from nvfuse import FusionDefinition

_fresh = itertools.count(1)


def fresh_constant():
    """A constant no earlier call of this process returned (nor, through
    the clock, a recent process)."""
    return 1.0 + next(_fresh) / 4096 + time.time_ns() % 1000 / 1e7


def _softmax_rows(fd, z):
    e = fd.ops.exp(z - fd.ops.max(z, [1], keepdim=True))
    return e / fd.ops.sum(e, [1], keepdim=True)


def kernel_matmul_kernel(c):
    """relu(x * c) (a kernel) @ w (ATen), softmax of (.) * c (a kernel).
    Returns (fd, torch_fn(x, w))."""
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True)
        w = fd.define_tensor([-1, -1], contiguity=True)
        fd.add_output(_softmax_rows(fd, fd.ops.matmul(fd.ops.relu(x * c), w) * c))

    def torch_fn(x, w):
        return torch.softmax((torch.relu(x * c) @ w) * c, -1)

    return fd, torch_fn


def three_kernels(c):
    """layer norm (a kernel) @ w1, tanh GELU (a kernel) @ w2, softmax (a
    kernel): three kernels between two matmuls. Returns (fd,
    torch_fn(x, w1, w2))."""
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True)
        a = fd.define_tensor([-1, -1], contiguity=True)
        b = fd.define_tensor([-1, -1], contiguity=True)
        var, mean = fd.ops.var_mean(x, [1], correction=0, keepdim=True)
        h = (x - mean) * fd.ops.rsqrt(var + 1e-5) * c
        y = fd.ops.matmul(h, a) * c
        gelu = y * 0.5 * (fd.ops.tanh(y * 0.79788456 * (1.0 + 0.044715 * y * y)) + 1.0)
        fd.add_output(_softmax_rows(fd, fd.ops.matmul(gelu, b) * c))

    def torch_fn(x, w1, w2):
        h = torch.nn.functional.layer_norm(x, x.shape[-1:]) * c
        g = torch.nn.functional.gelu((h @ w1) * c, approximate="tanh")
        return torch.softmax((g @ w2) * c, -1)

    return fd, torch_fn
