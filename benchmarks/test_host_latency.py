"""Host time per call, from Python: cached fusions on inputs so small that
the GPU finishes each kernel long before the host enqueues the next, so
that a call's wall-clock time is its host time. Against eager torch and
torch.compile in the same run, and with both sides replayed as CUDA graphs
(nvfuse: `fd.execute(inputs, cuda_graph=True)`; torch.compile:
mode="reduce-overhead").

Cases: a one-kernel pointwise fusion, a one-kernel layer norm, a fusion of
three segments (kernel, matmul, kernel) and one of ten (five linear layers,
each followed by a kernel). pytest-benchmark's clock is wall time of
CALLS calls plus one synchronize; extra_info["us_per_call"] is the figure
to read.

    python3 -m pytest benchmarks/test_host_latency.py --benchmark-json=h.json
"""

import pytest
import torch

from nvfuse import DataType, FusionDefinition
from workloads.gpu_timing import executor_fn

CALLS = 200
LAYERS = 5
FLOAT = DataType.Float
BF16 = DataType.BFloat16


def _add():
    with FusionDefinition() as fd:
        a = fd.define_tensor([-1], contiguity=True)
        b = fd.define_tensor([-1], contiguity=True)
        fd.add_output(a + b)
    x = torch.randn(1024, device="cuda")
    return fd, [x, x.clone()], lambda a, b: a + b, 1


def _layer_norm():
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True, dtype=BF16)
        w = fd.define_tensor([-1], contiguity=True, dtype=BF16)
        b = fd.define_tensor([-1], contiguity=True, dtype=BF16)
        xf = fd.ops.cast(x, FLOAT)
        var, mean = fd.ops.var_mean(xf, [1], correction=0)
        normed = (xf - fd.ops.broadcast(mean, [False, True])) * fd.ops.broadcast(
            fd.ops.rsqrt(var + 1e-5), [False, True]
        )
        wf, bf = (fd.ops.broadcast(fd.ops.cast(t, FLOAT), [True, False]) for t in (w, b))
        fd.add_output(fd.ops.cast(normed * wf + bf, BF16))
    x = torch.randn(8, 1024, dtype=torch.bfloat16, device="cuda")
    w = torch.randn(1024, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(1024, dtype=torch.bfloat16, device="cuda")
    return fd, [x, w, b], lambda x, w, b: torch.nn.functional.layer_norm(x, (1024,), w, b), 1


def _three_segments():
    """relu(x + b) (a kernel), @ w (a matmul), softmax (a kernel)."""
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True, dtype=BF16)
        b = fd.define_tensor([-1], contiguity=True, dtype=BF16)
        w = fd.define_tensor([-1, -1], contiguity=True, dtype=BF16)
        h = fd.ops.cast(fd.ops.relu(fd.ops.cast(x, FLOAT) + fd.ops.cast(b, FLOAT)), BF16)
        z = fd.ops.cast(fd.ops.matmul(h, w), FLOAT)
        e = fd.ops.exp(z - fd.ops.broadcast(fd.ops.max(z, [1]), [False, True]))
        fd.add_output(fd.ops.cast(e / fd.ops.broadcast(fd.ops.sum(e, [1]), [False, True]), BF16))

    def torch_fn(x, b, w):
        h = torch.relu(x.float() + b.float()).to(x.dtype)
        return torch.softmax((h @ w).float(), -1).to(x.dtype)

    x = torch.randn(16, 256, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(256, dtype=torch.bfloat16, device="cuda")
    w = torch.randn(256, 256, dtype=torch.bfloat16, device="cuda")
    return fd, [x, b, w], torch_fn, 3


def _ten_segments():
    """LAYERS x (linear (a matmul), tanh-GELU (a kernel))."""
    with FusionDefinition() as fd:
        h = fd.define_tensor([-1, -1], contiguity=True, dtype=BF16)
        weights = [fd.define_tensor([-1, -1], contiguity=True, dtype=BF16) for _ in range(LAYERS)]
        for w in weights:
            y = fd.ops.cast(fd.ops.linear(h, w), FLOAT)
            inner = (y + y * y * y * 0.044715) * 0.7978845608028654
            h = fd.ops.cast(y * 0.5 * (fd.ops.tanh(inner) + 1.0), BF16)
        fd.add_output(h)

    def torch_fn(h, *weights):
        for w in weights:
            y = torch.nn.functional.linear(h, w).float()
            h = torch.nn.functional.gelu(y, approximate="tanh").to(h.dtype)
        return h

    h = torch.randn(16, 256, dtype=torch.bfloat16, device="cuda")
    ws = [torch.randn(256, 256, dtype=torch.bfloat16, device="cuda") / 16 for _ in range(LAYERS)]
    return fd, [h, *ws], torch_fn, 2 * LAYERS


CASES = {
    "pointwise_1_kernel": _add,
    "layer_norm_1_kernel": _layer_norm,
    "3_segments": _three_segments,
    "10_segments": _ten_segments,
}


def _call(executor, fd, inputs, torch_fn):
    """The call timed: the plain executors as every benchmark makes them
    (workloads.gpu_timing.executor_fn), or either side's CUDA graphs."""
    if executor == "nvfuse-cudagraphs":
        return lambda: fd.execute(inputs, cuda_graph=True)
    if executor != "compile-cudagraphs":
        return executor_fn(executor, inputs, torch_fn, lambda: fd)
    torch._dynamo.reset()
    compiled = torch.compile(torch_fn, dynamic=False, mode="reduce-overhead")

    def replay():
        torch.compiler.cudagraph_mark_step_begin()
        return compiled(*inputs)

    return replay


@pytest.mark.parametrize(
    "executor", ["nvfuse", "eager", "compile", "nvfuse-cudagraphs", "compile-cudagraphs"]
)
@pytest.mark.parametrize("case", list(CASES))
def test_host_latency(benchmark, case, executor):
    fd, inputs, torch_fn, segments = CASES[case]()
    got = fd.execute(inputs)[0]
    torch.testing.assert_close(got.float(), torch_fn(*inputs).float(), rtol=2e-2, atol=2e-2)
    assert len(fd.segment_summary()) == segments, fd.segment_summary()
    call = _call(executor, fd, inputs, torch_fn)
    for _ in range(20):
        call()
    torch.cuda.synchronize()

    def calls():
        for _ in range(CALLS):
            call()
        torch.cuda.synchronize()

    benchmark.pedantic(calls, rounds=15, warmup_rounds=2)
    benchmark.extra_info["us_per_call"] = round(benchmark.stats.stats.median / CALLS * 1e6, 2)
    benchmark.extra_info["segments"] = segments
