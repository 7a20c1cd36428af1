"""The LM head and its loss chunked (nvfuse/dynamo/linear_cross_entropy.py)
against torch's composite, eager and Inductor-compiled, at a 128k-word
vocabulary (Llama 3's, 128256), bf16:

- `test_lm_head_loss`: the head alone, cross_entropy(linear(x, w).float(),
  target) forward and backward over 8192 rows of width 2048;
- `test_decoder_training_step`: a transformers Llama (width 2048, two
  layers, 4 x 2048 tokens) whose loss alone is compiled, as a training
  loop compiles `lambda batch: model(**batch).loss`; forward and backward.

extra_info records each case's peak memory (`peak_mb`: all allocated
memory; `step_peak_mb`: above what was allocated before the step) and
first call, and the split of its GPU time by kernel author.

    python3 -m pytest benchmarks/test_lm_head_loss.py --benchmark-json=lm_head.json
"""

import time

import pytest
import torch
import torch.nn.functional as F

import nvfuse.dynamo  # noqa: F401 (registers backend="nvfuse")
from workloads.gpu_time_split import gpu_time_split
from workloads.model_zoo import llama

ROWS, WIDTH, VOCAB = 8192, 2048, 128256
EXECUTORS = ["nvfuse", "eager", "compile"]


def _compiled(fn, executor):
    if executor == "eager":
        return fn
    return torch.compile(fn, backend="nvfuse" if executor == "nvfuse" else "inductor")


def _step_peak_bytes(step):
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    step()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - before


def _measure(gpu_benchmark, benchmark, step, bytes_moved):
    start = time.perf_counter()
    step()
    torch.cuda.synchronize()
    first_call = time.perf_counter() - start
    step()
    peak = _step_peak_bytes(step)
    total_peak = torch.cuda.max_memory_allocated()
    gpu_benchmark(step, bytes_moved, rounds=10, warmup=2)
    benchmark.extra_info.update(
        first_call_s=round(first_call, 2),
        step_peak_mb=round(peak / 2**20),
        peak_mb=round(total_peak / 2**20),
        gpu_ms=gpu_time_split(step),
    )


def _head_loss(x, w, target):
    return F.cross_entropy(F.linear(x, w).float(), target)


@pytest.mark.parametrize("executor", EXECUTORS)
def test_lm_head_loss(gpu_benchmark, benchmark, executor):
    torch._dynamo.reset()
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(ROWS, WIDTH, device="cuda", dtype=torch.bfloat16, generator=g)
    w = torch.randn(VOCAB, WIDTH, device="cuda", dtype=torch.bfloat16, generator=g) / 45
    x.requires_grad_(), w.requires_grad_()
    target = torch.randint(0, VOCAB, (ROWS,), device="cuda", generator=g)
    loss_fn = _compiled(_head_loss, executor)

    def step():
        loss = loss_fn(x, w, target)
        torch.autograd.grad(loss, (x, w))

    # The logits once in bf16, the operands and their gradients.
    bytes_moved = ROWS * VOCAB * 2 + 2 * (x.numel() + w.numel()) * 2
    _measure(gpu_benchmark, benchmark, step, bytes_moved)
    torch._dynamo.reset()


@pytest.mark.parametrize("executor", EXECUTORS)
def test_decoder_training_step(gpu_benchmark, benchmark, executor):
    pytest.importorskip("transformers")
    torch._dynamo.reset()
    torch.manual_seed(0)
    model, make_batch = llama("bench", vocab_size=VOCAB)
    model.to("cuda", torch.bfloat16)
    batch = make_batch("cuda")
    loss_fn = _compiled(lambda batch: model(**batch).loss, executor)
    params = list(model.parameters())

    def step():
        for p in params:
            p.grad = None
        loss_fn(batch).backward()

    params_bytes = sum(p.numel() * p.element_size() for p in params)
    _measure(gpu_benchmark, benchmark, step, params_bytes)
    torch._dynamo.reset()
