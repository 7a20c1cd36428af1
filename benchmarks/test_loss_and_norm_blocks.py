"""Losses and norm blocks with indexing and random ops, against eager
PyTorch and torch.compile: cross-entropy forward and backward (rows of 8192
logits), dropout + residual + layer norm forward, and nanoGPT's attention
prologue (causal mask, softmax, dropout). Definitions in
workloads/loss_and_norm_definitions.py.

Bytes moved are every input read once plus every output written once.
NVFUSE_BENCH_LOSS_SIZES picks sizes (default "64MB,256MB": the bytes of
the main input).

    python3 -m pytest benchmarks/test_loss_and_norm_blocks.py --benchmark-json=l.json
    python3 benchmarks/report.py l.json
"""

import os

import pytest
import torch


import workloads.loss_and_norm_definitions as defs  # noqa: E402
from workloads.gpu_timing import executor_fn  # noqa: E402

SIZES = {"16MB": 16 << 20, "64MB": 64 << 20, "256MB": 256 << 20}
SELECTED = [s for s in os.environ.get("NVFUSE_BENCH_LOSS_SIZES", "64MB,256MB").split(",") if s]
DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}
CASES = ["cross_entropy_fwd", "cross_entropy_bwd", "dropout_ln", "attention_prologue"]
RANDOM = {"dropout_ln", "attention_prologue"}


def _check(case, outs, expected):
    if case not in RANDOM:
        for got, want in zip(outs, expected):
            torch.testing.assert_close(got.float(), want.float(), rtol=2e-2, atol=2e-2)
        return
    # Random masks differ between executors: compare the fraction dropped.
    got = outs[0].float()
    dropped = (got == 0).double().mean().item()
    baseline = (expected[0].float() == 0).double().mean().item()
    assert abs(dropped - baseline) < 0.02, (dropped, baseline)


@pytest.mark.parametrize("executor", ["nvfuse", "eager", "compile"])
@pytest.mark.parametrize("size", SELECTED)
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("case", CASES)
def test_loss_or_norm_block(gpu_benchmark, case, dtype, size, executor):
    torch.manual_seed(0)
    elt = torch.tensor([], dtype=DTYPES[dtype]).element_size()
    rows = max(1, SIZES[size] // (defs.WIDTH * elt))
    inputs = getattr(defs, f"{case}_inputs")(rows, DTYPES[dtype])
    torch_fn = getattr(defs, f"{case}_torch")
    fn = executor_fn(executor, inputs, torch_fn, lambda: getattr(defs, f"{case}_fd")(DTYPES[dtype]))
    outs = fn()
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    expected = torch_fn(*inputs)
    _check(case, outs, list(expected) if isinstance(expected, tuple) else [expected])
    bytes_moved = sum(t.numel() * t.element_size() for t in inputs)
    bytes_moved += sum(t.numel() * t.element_size() for t in outs)
    del outs
    gpu_benchmark(fn, bytes_moved)
