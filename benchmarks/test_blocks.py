"""Transformer blocks around ATen calls (cuBLAS, flash attention), against
eager PyTorch and torch.compile: the MLP (linear -> bias + tanh-GELU ->
linear) and causal self-attention (qkv linear, split, head permutes, flash
attention, output linear), forward, bf16.

These are compute-bound: the number to read is the time against
torch.compile (the % of copy bandwidth uses input + output bytes only).
NVFUSE_BENCH_BLOCK_SIZES picks sizes (default "gpt2,llama": hidden 768 with
12 heads and 4096 with 32 heads, 8192 tokens).

    python3 -m pytest benchmarks/test_blocks.py --benchmark-json=b.json
    python3 benchmarks/report.py b.json
"""

import os

import pytest
import torch


from workloads.gpu_timing import executor_fn  # noqa: E402
from workloads.block_definitions import (  # noqa: E402
    attention_fd,
    attention_inputs,
    attention_torch,
    mlp_fd,
    mlp_inputs,
    mlp_torch,
)

SHAPES = {  # (batch, seq, heads, head_dim)
    "gpt2": (8, 1024, 12, 64),
    "llama": (4, 2048, 32, 128),
}
SELECTED = [s for s in os.environ.get("NVFUSE_BENCH_BLOCK_SIZES", "gpt2,llama").split(",") if s]
DTYPE = torch.bfloat16


def _case(case, size):
    batch, seq, heads, head_dim = SHAPES[size]
    if case == "mlp":
        inputs = mlp_inputs(batch * seq, heads * head_dim, DTYPE, "cuda")
        return inputs, mlp_torch, lambda: mlp_fd(DTYPE)
    inputs = attention_inputs(batch, seq, heads, head_dim, DTYPE, "cuda")
    return (
        inputs,
        lambda *t: attention_torch(*t, heads),
        lambda: attention_fd(batch, seq, heads, head_dim, DTYPE),
    )


@pytest.mark.parametrize("executor", ["nvfuse", "eager", "compile"])
@pytest.mark.parametrize("size", SELECTED)
@pytest.mark.parametrize("dtype", ["bf16"])
@pytest.mark.parametrize("case", ["mlp", "attention"])
def test_block(gpu_benchmark, case, dtype, size, executor):
    torch.manual_seed(0)
    inputs, torch_fn, make_fd = _case(case, size)
    run = executor_fn(executor, inputs, torch_fn, make_fd)
    fn = (lambda: run()[0]) if executor == "nvfuse" else run  # noqa: E731
    out = fn()
    torch.testing.assert_close(out.float(), torch_fn(*inputs).float(), rtol=5e-2, atol=5e-2)
    bytes_moved = sum(t.numel() * t.element_size() for t in inputs)
    bytes_moved += out.numel() * out.element_size()
    del out
    gpu_benchmark(fn, bytes_moved)
