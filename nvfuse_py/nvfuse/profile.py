"""execute(..., profile=True): the device time of each kernel a call ran.

Kernels are timed by torch's profiler (CUPTI through Kineto), the tool that
also shows them in traces; only kernels nvfuse generated are counted, so a
matmul segment's cuBLAS kernel is left out of `kernel_profiles` but its time
is in `cuda_time_ms` (the span of all the call's GPU work)."""

import time
from dataclasses import dataclass, field

import torch


@dataclass
class KernelProfile:
    """One launched kernel: its name and device time."""

    name: str
    time_ms: float
    device: int


@dataclass
class FusionProfile:
    """What one profiled execute() ran: `segments` (the fusion's segments),
    `kernel_profiles` (nvfuse's generated kernels, in launch order),
    `kernel_time_ms` (their sum), `cuda_time_ms` (first start to last end
    of every GPU activity of the call) and `host_time_ms` (the call's wall
    time on the host)."""

    fusion_id: int
    segments: int
    host_time_ms: float
    cuda_time_ms: float = 0.0
    kernel_profiles: list = field(default_factory=list)

    @property
    def kernel_time_ms(self) -> float:
        return sum(k.time_ms for k in self.kernel_profiles)


def _device_events(prof):
    events = []
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            events.append(event)
    return events


def profiled_execute(run, fusion_id, segments, on_cuda):
    """(outputs, FusionProfile) of `run()`."""
    if not on_cuda:
        start = time.perf_counter()
        outputs = run()
        host_ms = (time.perf_counter() - start) * 1e3
        return outputs, FusionProfile(fusion_id, segments, host_ms)
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        start = time.perf_counter()
        outputs = run()
        host_ms = (time.perf_counter() - start) * 1e3
        torch.cuda.synchronize()
    events = _device_events(prof)
    result = FusionProfile(fusion_id, segments, host_ms)
    if events:
        begin = min(e.time_range.start for e in events)
        end = max(e.time_range.end for e in events)
        result.cuda_time_ms = (end - begin) / 1e3
    for e in sorted(events, key=lambda e: e.time_range.start):
        if e.name.startswith("nvfuse_"):
            result.kernel_profiles.append(
                KernelProfile(e.name, (e.time_range.end - e.time_range.start) / 1e3, e.device_index)
            )
    return outputs, result
