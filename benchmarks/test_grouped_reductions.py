"""Many independent column sums in one fusion, bf16: the bias gradients of a
transformer's backward, which the torch.compile backend groups into one
region at the end of the graph (each linear's bias gradient is the sum over
the tokens of its output's gradient). ViT-Base's, 64 images of 197 tokens:
per layer four 768-wide sums (query, key, value and output projections,
and the second MLP linear) and one 3072-wide one.

- nvfuse: one fusion of all the sums;
- eager: one torch.sum(t, 0) per tensor;
- compile: the same per-tensor sums through torch.compile (Inductor).

Bytes moved: every input read once and every sum written once.

    python3 -m pytest benchmarks/test_grouped_reductions.py --benchmark-json=grouped.json
    python3 benchmarks/report.py grouped.json
"""

import pytest
import torch

from nvfuse import DataType
from workloads.norm_definitions import define_column_sums

TOKENS = 64 * 197

# name: (count, width)
CASES = {
    "sums1x768": (1, 768),
    "sums4x768": (4, 768),
    "sums8x768": (8, 768),
    "sums20x768": (20, 768),
    "sums4x3072": (4, 3072),
}


def _per_tensor(tensors):
    return [t.sum(0) for t in tensors]


def _function(executor, tensors):
    if executor == "nvfuse":
        fd = define_column_sums(len(tensors), TOKENS, tensors[0].shape[1], DataType.BFloat16)
        return lambda: fd.execute(tensors)
    if executor == "eager":
        return lambda: _per_tensor(tensors)
    compiled = torch.compile(_per_tensor)
    return lambda: compiled(tensors)


@pytest.mark.parametrize("executor", ["nvfuse", "eager", "compile"])
@pytest.mark.parametrize("case", list(CASES))
def test_grouped_column_sums(gpu_benchmark, case, executor):
    count, width = CASES[case]
    torch.manual_seed(0)
    tensors = [
        torch.randn(TOKENS, width, device="cuda", dtype=torch.bfloat16) for _ in range(count)
    ]
    fn = _function(executor, tensors)
    for got, t in zip(fn(), tensors):
        torch.testing.assert_close(got.float(), t.float().sum(0), rtol=2e-2, atol=0.5)
    bytes_moved = sum(t.numel() * t.element_size() + width * 2 for t in tensors)
    gpu_benchmark(fn, bytes_moved)
