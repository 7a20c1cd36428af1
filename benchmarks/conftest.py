"""The benchmark harness: GPU time measured with CUDA events, L2 flushed
before every round, the median reported, and bandwidth put against a
device-to-device copy measured in the same run.

Every case runs as a pytest-benchmark whose clock is the accumulated CUDA
event time of the timed calls, so pytest-benchmark's statistics (min,
median, ...) are GPU times; extra_info carries the bytes moved, GB/s and the
% of the copy bandwidth.
"""

import gc
import statistics
import time

import pytest
import torch

from workloads.gpu_timing import copy_gbps
from workloads.l2_flush import make_l2_flush

COPY_BYTES = 1 << 30


EXECUTOR_ORDER = {
    "nvfuse": 0,
    "eager": 1,
    "compile": 2,
    "nvfuse-cudagraphs": 3,
    "compile-cudagraphs": 4,
    "thunder": 5,
    "compile-max-autotune": 6,
}


def pytest_collection_modifyitems(config, items):
    if not torch.cuda.is_available():
        skip = pytest.mark.skip(reason="benchmarks need a CUDA GPU")
        for item in items:
            item.add_marker(skip)
        return

    # One executor at a time: torch.compile's background work (compile
    # workers, freed graphs) must not land inside another executor's timing.
    def executor_rank(item):
        params = getattr(item, "callspec", None)
        executor = params.params.get("executor") if params else None
        return EXECUTOR_ORDER.get(executor, -1)

    items.sort(key=executor_rank)


@pytest.fixture(scope="session")
def l2_flush():
    return make_l2_flush()


@pytest.fixture(scope="session")
def copy_bandwidth(l2_flush):
    """GB/s of a large device-to-device copy (bytes read + written)."""
    return copy_gbps(l2_flush, COPY_BYTES)


class _GpuClock:
    """A pytest-benchmark timer reading accumulated GPU time (seconds)."""

    def __init__(self):
        self.seconds = 0.0

    def __call__(self):
        return self.seconds


@pytest.fixture
def gpu_benchmark(benchmark, l2_flush, copy_bandwidth):
    """gpu_benchmark(fn, bytes_moved): times fn on the GPU and records
    bandwidth next to the copy ceiling."""

    def run(fn, bytes_moved, rounds=40, warmup=5):
        clock = _GpuClock()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        # Per round, the host's time to return from fn (enqueue) and to
        # see its work finish (wall): a GPU time near the enqueue time is
        # a host-bound case, and a GPU time far from both points at the
        # measurement rather than the case.
        enqueue_s, wall_s = [], []

        def timed():
            started = time.perf_counter()
            start.record()
            fn()
            end.record()
            returned = time.perf_counter()
            end.synchronize()
            finished = time.perf_counter()
            clock.seconds += start.elapsed_time(end) * 1e-3
            enqueue_s.append(returned - started)
            wall_s.append(finished - started)

        for _ in range(warmup):
            fn()
        torch.cuda.synchronize()
        benchmark._timer = clock
        gc.collect()
        gc.disable()  # no collector pauses inside timed calls
        try:
            benchmark.pedantic(timed, setup=l2_flush, rounds=rounds, iterations=1)
        finally:
            gc.enable()
        median = benchmark.stats.stats.median
        gbps = bytes_moved / median / 1e9
        benchmark.extra_info.update(
            bytes=bytes_moved,
            gbps=round(gbps, 1),
            copy_gbps=round(copy_bandwidth, 1),
            pct_of_copy=round(100 * gbps / copy_bandwidth, 1),
            median_us=round(median * 1e6, 2),
            host_enqueue_us=round(statistics.median(enqueue_s) * 1e6, 2),
            host_wall_us=round(statistics.median(wall_s) * 1e6, 2),
        )
        return median

    return run
