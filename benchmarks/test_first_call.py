"""A new fusion's first call, wall-clock from Python to the synchronized
result: with the kernel compiled on that call (the default; a fusion of
several kernels compiles them side by side, nvfuse.set_compile_ahead, and
"nvfuse compiles in turn" is the same call with that off), with tiered
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

import time

import pytest
import torch

import nvfuse
from nvfuse import FusionDefinition
from workloads.multi_kernel import fresh_constant, kernel_matmul_kernel, three_kernels


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


def _with_weights_of(make, count):
    """A multi-kernel case of workloads.multi_kernel as a one-input case:
    its weights made here, passed after x."""

    def case(c):
        weights = [torch.randn(1024, 1024, device="cuda") / 32 for _ in range(count)]
        fd, torch_fn = make(c)
        return _with_weights(fd, weights), lambda x: torch_fn(x, *weights)

    return case


class _with_weights:
    """`fd` called with x and its weights, as execute([x]) is for the
    one-input cases."""

    def __init__(self, fd, weights):
        self.fd, self.weights = fd, weights

    def execute(self, inputs):
        return self.fd.execute(list(inputs) + self.weights)


CASES = {
    "add_relu": _add_relu,
    "tanh_gelu": _tanh_gelu,
    "softmax": _softmax,
    "layer_norm": _layer_norm,
    "kernel_matmul_kernel": _with_weights_of(kernel_matmul_kernel, 1),
    "three_kernels": _with_weights_of(three_kernels, 2),
}
MULTI_KERNEL = {"kernel_matmul_kernel", "three_kernels"}
TIERS = ["nvfuse compiles", "nvfuse compiles in turn", "nvfuse tiered", "eager"]
PAIRS = [
    (case, tier)
    for case in CASES
    for tier in TIERS
    if tier != "nvfuse compiles in turn" or case in MULTI_KERNEL
]


@pytest.fixture(scope="module")
def x():
    x = torch.randn(4096, 1024, device="cuda")
    for make in CASES.values():
        for tiered in (False, True):
            nvfuse.set_tiered_compile(tiered)
            fd, eager = make(fresh_constant())
            fd.execute([x])
            eager(x)
    nvfuse.set_tiered_compile(False)
    torch.cuda.synchronize()
    time.sleep(1.0)  # the warm-up's background compiles finish
    return x


@pytest.mark.parametrize("case,tier", PAIRS)
def test_first_call(benchmark, x, case, tier):
    def setup():
        fd, eager = CASES[case](fresh_constant())
        call = (lambda: eager(x)) if tier == "eager" else (lambda: fd.execute([x]))
        torch.cuda.synchronize()
        return (call,), {}

    def first_call(call):
        call()
        torch.cuda.synchronize()

    nvfuse.set_tiered_compile(tier == "nvfuse tiered")
    nvfuse.set_compile_ahead(tier != "nvfuse compiles in turn")
    try:
        benchmark.pedantic(first_call, setup=setup, rounds=5, warmup_rounds=0)
    finally:
        nvfuse.set_tiered_compile(False)
        nvfuse.set_compile_ahead(True)
        time.sleep(0.5)  # background compiles end before the next case
    benchmark.extra_info["first_call_ms"] = round(benchmark.stats.stats.median * 1e3, 2)
