"""execute(..., profile=True): the device time of each kernel a call ran.

Kernels are timed by torch's profiler (CUPTI through Kineto), the tool that
also shows them in traces. Every kernel of the call is listed, nvfuse's
generated kernels and the ATen kernels of its ATen segments (a matmul's
cuBLAS kernel), with the fields of the predecessor's KernelProfile and
FusionProfile. Fields the profiler does not report per kernel (launch
geometry, registers, compile time) keep their empty values; bytes and
bandwidth are the call's, put on its kernel when it ran one."""

import time
from dataclasses import dataclass, field

import torch

# The predecessor's scheduler names, by the kind in a generated kernel's
# name (nvfuse_<kind>_<tactic>); ATen kernels ran as ATen calls, which it
# called "expr_eval".
_SCHEDULERS = {
    "pointwise": "pointwise",
    "reduction": "reduction",
    "coordinates": "pointwise",
    "scan": "reduction",
}
ATEN_SCHEDULER = "expr_eval"


def scheduler_of(kernel_name):
    """The predecessor's scheduler name for a kernel of this name."""
    if not kernel_name.startswith("nvfuse_"):
        return ATEN_SCHEDULER
    kind = kernel_name[len("nvfuse_") :].split("_", 1)[0]
    return _SCHEDULERS.get(kind, kind)


@dataclass
class KernelProfile:
    """One launched kernel: its name, device time, and the predecessor's
    other fields (empty where the profiler reports nothing per kernel)."""

    name: str
    time_ms: float
    device: int
    segment_id: int = 0
    stream: int = 0
    correlation_id: int = 0
    compile_time_ms: float = 0.0
    effective_bandwidth_gbs: float = 0.0
    percentage_peak_bandwidth: float = 0.0
    grid_str: str = ""
    block_str: str = ""
    cluster_str: str = ""
    shared_mem_str: str = ""
    registers: int = 0
    input_bytes: int = 0
    output_bytes: int = 0
    scheduler: str = ""

    def __post_init__(self):
        if not self.scheduler:
            self.scheduler = scheduler_of(self.name)


@dataclass
class FusionProfile:
    """What one profiled execute() ran: `segments` (the fusion's segments),
    `kernel_profiles` (every kernel, in launch order), `kernel_time_ms`
    (their sum), `cuda_time_ms` (first start to last end of every GPU
    activity of the call; `cuda_evt_time_ms` too), `host_time_ms` (the
    call's wall time on the host), the bytes of its tensor inputs and
    outputs, and the bandwidth they give over `cuda_time_ms`."""

    fusion_id: int
    segments: int
    host_time_ms: float
    cuda_time_ms: float = 0.0
    kernel_profiles: list = field(default_factory=list)
    input_bytes: int = 0
    output_bytes: int = 0
    compile_time_ms: float = 0.0
    verbose: bool = False
    peak_bandwidth_gbs: float = 0.0

    @property
    def kernel_time_ms(self) -> float:
        return sum(k.time_ms for k in self.kernel_profiles)

    @property
    def cuda_evt_time_ms(self) -> float:
        return self.cuda_time_ms

    @property
    def effective_bandwidth_gbs(self) -> float:
        seconds = self.cuda_time_ms / 1e3
        return (self.input_bytes + self.output_bytes) / seconds / 1e9 if seconds else 0.0

    @property
    def percentage_peak_bandwidth(self) -> float:
        if not self.peak_bandwidth_gbs:
            return 0.0
        return 100.0 * self.effective_bandwidth_gbs / self.peak_bandwidth_gbs

    # The predecessor's spelling of the field.
    percentage_peak_bandwith = percentage_peak_bandwidth


def _device_events(prof):
    events = []
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            events.append(event)
    return events


def _tensor_bytes(values):
    return sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))


def _peak_bandwidth_gbs(device):
    """The device's memory bandwidth in GB/s, or 0 where torch cannot say."""
    from ._device_properties import peak_bandwidth_gbps

    try:
        return peak_bandwidth_gbps(torch.cuda.get_device_properties(device))
    except (RuntimeError, AssertionError, AttributeError):
        return 0.0


def _kernel_profiles(events, result):
    ordered = sorted(events, key=lambda e: e.time_range.start)
    kernels = []
    for position, e in enumerate(ordered):
        kernel = KernelProfile(
            e.name,
            (e.time_range.end - e.time_range.start) / 1e3,
            e.device_index,
            segment_id=position,
            stream=int(getattr(e, "thread", 0) or 0),
            correlation_id=int(getattr(e, "id", 0) or 0),
        )
        kernels.append(kernel)
    if len(kernels) == 1:  # the call's bytes are its kernel's
        only = kernels[0]
        only.input_bytes, only.output_bytes = result.input_bytes, result.output_bytes
        only.effective_bandwidth_gbs = result.effective_bandwidth_gbs
        only.percentage_peak_bandwidth = result.percentage_peak_bandwidth
    return kernels


def profiled_execute(run, fusion_id, segments, on_cuda, inputs=()):
    """(outputs, FusionProfile) of `run()`."""
    if not on_cuda:
        start = time.perf_counter()
        outputs = run()
        host_ms = (time.perf_counter() - start) * 1e3
        result = FusionProfile(fusion_id, segments, host_ms)
        result.input_bytes, result.output_bytes = _tensor_bytes(inputs), _tensor_bytes(outputs)
        return outputs, result
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        start = time.perf_counter()
        outputs = run()
        host_ms = (time.perf_counter() - start) * 1e3
        torch.cuda.synchronize()
    events = _device_events(prof)
    result = FusionProfile(fusion_id, segments, host_ms)
    result.input_bytes, result.output_bytes = _tensor_bytes(inputs), _tensor_bytes(outputs)
    cuda_inputs = [t for t in inputs if isinstance(t, torch.Tensor) and t.is_cuda]
    device = cuda_inputs[0].device if cuda_inputs else torch.device("cuda")
    result.peak_bandwidth_gbs = _peak_bandwidth_gbs(device)
    if events:
        begin = min(e.time_range.start for e in events)
        end = max(e.time_range.end for e in events)
        result.cuda_time_ms = (end - begin) / 1e3
    kernels = [e for e in events if not e.name.startswith(("Memcpy", "Memset"))]
    result.kernel_profiles = _kernel_profiles(kernels, result)
    return outputs, result
