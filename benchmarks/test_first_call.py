"""A new fusion's first call, wall-clock from Python to the synchronized
result: with the kernel compiled on that call (the default), with tiered
compilation (`nvfuse.set_tiered_compile(True)`: the kernel compiles in the
background while the call runs on the ATen reference evaluator), and
eager torch's call of the same ops. Each round defines a fusion with a
constant of its own, so that no cache (memory or disk: NVFUSE_DISK_CACHE=0
for the run) has its kernel. A fusion of each kind runs once on both tiers
before the rounds: torch loads its own kernels on first use, which is not
what is measured. extra_info["first_call_ms"] is the figure to read.

    NVFUSE_DISK_CACHE=0 python3 -m pytest benchmarks/test_first_call.py \\
        --benchmark-json=f.json
"""

import itertools
import time

import pytest
import torch

import nvfuse
from nvfuse import FusionDefinition

_fresh = itertools.count(1)


def _constant():
    return 1.0 + next(_fresh) / 4096 + time.time_ns() % 1000 / 1e7


def _add_relu(c):
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True)
        fd.add_output(fd.ops.relu(x + c) * c)
    return fd, lambda x: torch.relu(x + c) * c


def _tanh_gelu(c):
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True)
        y = x * c
        fd.add_output(y * 0.5 * (fd.ops.tanh(y * 0.79788456 * (1.0 + 0.044715 * y * y)) + 1.0))
    return fd, lambda x: torch.nn.functional.gelu(x * c, approximate="tanh")


def _softmax(c):
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True)
        y = x * c
        e = fd.ops.exp(y - fd.ops.max(y, [1], keepdim=True))
        fd.add_output(e / fd.ops.sum(e, [1], keepdim=True))
    return fd, lambda x: torch.softmax(x * c, -1)


def _layer_norm(c):
    with FusionDefinition() as fd:
        x = fd.define_tensor([-1, -1], contiguity=True)
        var, mean = fd.ops.var_mean(x, [1], correction=0, keepdim=True)
        fd.add_output((x - mean) * fd.ops.rsqrt(var + 1e-5) * c)
    return fd, lambda x: torch.nn.functional.layer_norm(x, x.shape[-1:]) * c


CASES = {
    "add_relu": _add_relu,
    "tanh_gelu": _tanh_gelu,
    "softmax": _softmax,
    "layer_norm": _layer_norm,
}
TIERS = ["nvfuse compiles", "nvfuse tiered", "eager"]


@pytest.fixture(scope="module")
def x():
    x = torch.randn(4096, 1024, device="cuda")
    for make in CASES.values():
        for tiered in (False, True):
            nvfuse.set_tiered_compile(tiered)
            fd, eager = make(_constant())
            fd.execute([x])
            eager(x)
    nvfuse.set_tiered_compile(False)
    torch.cuda.synchronize()
    time.sleep(1.0)  # the warm-up's background compiles finish
    return x


@pytest.mark.parametrize("tier", TIERS)
@pytest.mark.parametrize("case", list(CASES))
def test_first_call(benchmark, x, case, tier):
    def setup():
        fd, eager = CASES[case](_constant())
        call = (lambda: eager(x)) if tier == "eager" else (lambda: fd.execute([x]))
        torch.cuda.synchronize()
        return (call,), {}

    def first_call(call):
        call()
        torch.cuda.synchronize()

    nvfuse.set_tiered_compile(tier == "nvfuse tiered")
    try:
        benchmark.pedantic(first_call, setup=setup, rounds=5, warmup_rounds=0)
    finally:
        nvfuse.set_tiered_compile(False)
        time.sleep(0.5)  # background compiles end before the next case
    benchmark.extra_info["first_call_ms"] = round(benchmark.stats.stats.median * 1e3, 2)
