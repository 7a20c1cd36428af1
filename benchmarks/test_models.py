"""Whole real models through torch.compile: the model zoo
(workloads/model_zoo.py) at its `bench` sizes (decoders 4 x 2048 tokens,
GPT-2 8 x 1024, encoders 16 x 512, vision batch 64 at 224x224), bf16
weights, an inference step (forward with the model's loss, no grad) and a
training step (forward and backward), with backend="nvfuse" against eager
and Inductor (default mode) in the same run.

extra_info records per case the first call's time (compile included), the
peak memory of a step, and the split of one step's GPU time by kernel
author (workloads/gpu_time_split.py): nvfuse's or Inductor's kernels,
GEMMs/convolutions/attention, layout copies and other ATen kernels.
NVFUSE_BENCH_GPU_SPLIT=0 leaves the split out: every case but the first
is otherwise timed after torch.profiler has run in the process, and a
step has timed up to 15% slower after its own profiled run than before it
(tools/zoo_host_check.py prints both), so a run of step times alone
leaves the profiler out.
NVFUSE_BENCH_ZOO picks the models (default: all of the zoo),
NVFUSE_BENCH_EXECUTORS the executors (default nvfuse,eager,compile;
also nvfuse-channels-last and nvfuse-nchw, the backend with its
channels_last option True and False; "nvfuse" has it "auto").

    python3 -m pytest benchmarks/test_models.py --benchmark-json=models.json
    python3 benchmarks/models_report.py models.json
"""

import os
import time

import pytest
import torch

from workloads.gpu_time_split import gpu_time_split
from workloads.model_zoo import BUILDERS, build

MODELS = [m for m in os.environ.get("NVFUSE_BENCH_ZOO", ",".join(BUILDERS)).split(",") if m]
EXECUTORS = [
    e for e in os.environ.get("NVFUSE_BENCH_EXECUTORS", "nvfuse,eager,compile").split(",") if e
]
DTYPE = torch.bfloat16
WITH_GPU_SPLIT = os.environ.get("NVFUSE_BENCH_GPU_SPLIT", "1") != "0"


def _compiled(model, executor):
    if executor == "eager":
        return model
    if executor == "nvfuse":
        return torch.compile(model, backend="nvfuse")
    if executor == "nvfuse-channels-last":
        return torch.compile(model, backend="nvfuse", options={"channels_last": True})
    if executor == "nvfuse-nchw":
        return torch.compile(model, backend="nvfuse", options={"channels_last": False})
    return torch.compile(model)


@pytest.mark.parametrize("executor", EXECUTORS)
@pytest.mark.parametrize("step", ["inference", "training"])
@pytest.mark.parametrize("model_name", MODELS)
def test_model_step(gpu_benchmark, benchmark, model_name, step, executor):
    torch._dynamo.reset()
    zoo = build(model_name, "bench")
    batch = zoo.bench_batch("cuda", DTYPE, step == "training")
    fn = zoo.step(_compiled(zoo.model, executor), batch, step == "training")
    start = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    first_call = time.perf_counter() - start
    fn()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    fn()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    params_bytes = sum(p.numel() * p.element_size() for p in zoo.model.parameters())
    gpu_benchmark(fn, params_bytes, rounds=20, warmup=2)
    benchmark.extra_info.update(first_call_s=round(first_call, 2), peak_mb=round(peak / 2**20))
    if WITH_GPU_SPLIT:
        benchmark.extra_info["gpu_ms"] = gpu_time_split(fn)
    del fn, zoo, batch
    torch._dynamo.reset()
