"""Layout copies the torch.compile backend makes with one grouped kernel
(`_C.copy_into_layouts`), against eager's and Inductor's copies.

Convolution weights copied into channels-last, as a channels-last
ResNet-50 step needs them: its 17 weights of 3x3 and 7x7 kernels, bf16.

- nvfuse: one `_C.copy_into_layouts` call (one grouped kernel launch),
  what the backend's `weight_layouts` pass runs;
- eager: one `contiguous(memory_format=torch.channels_last)` per weight,
  the copy cuDNN makes inside each convolution call;
- compile: the same per-weight copies through torch.compile (Inductor).

A language model's logits computed with padded rows (gemm_alignment.py:
a vocabulary of 30,522 or 50,257 words, rows padded to a multiple of 8)
copied into dense rows, which the backward reads as saved activations
and the user gets: 8,192 rows, bf16; eager and compile copy with
`contiguous()`. And the other way: dense rows copied into padded rows,
zeros in the added columns (`_C.copy_into_padded`; eager and compile pad
with torch.nn.functional.pad).

The GPU time comes with the usual copy-bandwidth figures;
extra_info["host_us"] is the host's time per call, enqueue only, the
figure a host-bound step pays.

    python3 -m pytest benchmarks/test_layout_copies.py --benchmark-json=copies.json
"""

import time

import pytest
import torch

from nvfuse import _C

# ResNet-50's 3x3 and 7x7 convolution weights: (out, in, kernel).
_WEIGHTS = (
    [(64, 3, 7)]
    + [(64, 64, 3)] * 3
    + [(128, 128, 3)] * 4
    + [(256, 256, 3)] * 6
    + [(512, 512, 3)] * 3
)


def _weights():
    return [torch.randn(o, i, k, k, device="cuda", dtype=torch.bfloat16) for o, i, k in _WEIGHTS]


def _per_weight(weights):
    return [w.contiguous(memory_format=torch.channels_last) for w in weights]


def _function(executor, weights):
    if executor == "nvfuse":
        strides = [
            list(torch.empty_like(w, memory_format=torch.channels_last).stride()) for w in weights
        ]
        return lambda: _C.copy_into_layouts(weights, strides)
    if executor == "eager":
        return lambda: _per_weight(weights)
    compiled = torch.compile(_per_weight)
    return lambda: compiled(weights)


def _host_us(fn, calls=50):
    fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    enqueued = time.perf_counter() - start
    torch.cuda.synchronize()
    return 1e6 * enqueued / calls


@pytest.mark.parametrize("executor", ["nvfuse", "eager", "compile"])
def test_resnet50_weights_to_channels_last(gpu_benchmark, benchmark, executor):
    weights = _weights()
    fn = _function(executor, weights)
    for got, w in zip(fn(), weights):
        assert got.is_contiguous(memory_format=torch.channels_last) and torch.equal(got, w)
    bytes_moved = 2 * sum(w.numel() * w.element_size() for w in weights)
    gpu_benchmark(fn, bytes_moved)
    benchmark.extra_info["host_us"] = round(_host_us(fn), 1)


@pytest.mark.parametrize("executor", ["nvfuse", "eager", "compile"])
@pytest.mark.parametrize("vocab", [30522, 50257])
def test_padded_logits_to_dense_rows(gpu_benchmark, benchmark, executor, vocab):
    rows, padded_width = 8192, -(-vocab // 8) * 8
    padded = torch.randn(rows, padded_width, device="cuda", dtype=torch.bfloat16)
    logits = padded[:, :vocab]
    if executor == "nvfuse":
        fn = lambda: _C.copy_into_layouts([logits], [[vocab, 1]])[0]  # noqa: E731
    elif executor == "eager":
        fn = logits.contiguous
    else:
        compiled = torch.compile(lambda x: x.contiguous())
        fn = lambda: compiled(logits)  # noqa: E731
    got = fn()
    assert got.is_contiguous() and torch.equal(got, logits)
    gpu_benchmark(fn, 2 * logits.numel() * logits.element_size())
    benchmark.extra_info["host_us"] = round(_host_us(fn), 1)


@pytest.mark.parametrize("executor", ["nvfuse", "eager", "compile"])
@pytest.mark.parametrize("vocab", [30522, 50257])
def test_dense_rows_to_padded_rows(gpu_benchmark, benchmark, executor, vocab):
    """The other way: a logits gradient of dense rows padded to aligned
    rows for the LM head's backward GEMMs (gemm_alignment.py), zeros in the
    added columns; eager and compile run torch.nn.functional.pad."""
    rows, padded_width = 8192, -(-vocab // 8) * 8
    grad = torch.randn(rows, vocab, device="cuda", dtype=torch.bfloat16)

    def pad(x):
        return torch.nn.functional.pad(x, (0, padded_width - vocab))

    if executor == "nvfuse":
        sizes, strides = [[rows, padded_width]], [[padded_width, 1]]
        fn = lambda: _C.copy_into_padded([grad], sizes, strides)[0]  # noqa: E731
    elif executor == "eager":
        fn = lambda: pad(grad)  # noqa: E731
    else:
        compiled = torch.compile(pad)
        fn = lambda: compiled(grad)  # noqa: E731
    assert torch.equal(fn(), pad(grad))
    gpu_benchmark(fn, grad.numel() * grad.element_size() + rows * padded_width * 2)
    benchmark.extra_info["host_us"] = round(_host_us(fn), 1)
