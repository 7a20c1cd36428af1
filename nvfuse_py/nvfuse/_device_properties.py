"""The current CUDA device's properties as the predecessor's
`pytorch_utils.get_device_properties` reports them, read from torch's
device properties (clock rates in kHz, the bus width in bits)."""

import torch

from .errors import UnsupportedError


def device_properties() -> dict:
    if not torch.cuda.is_available():
        raise UnsupportedError("get_device_properties: no CUDA device is available")
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return {
        "gpu_name": props.name,
        "gpu_compute_capability_major": props.major,
        "gpu_compute_capability_minor": props.minor,
        "gpu_gmem_bytes": props.total_memory,
        "gpu_sm_count": props.multi_processor_count,
        "gpu_max_threads_per_block": props.max_threads_per_block,
        "gpu_smem_bytes_per_block": props.shared_memory_per_block,
        # A block may use the whole register file of its SM on every GPU
        # nvfuse runs on (sm_70 and later: 64K registers either way).
        "gpu_regs_per_block": props.regs_per_multiprocessor,
        "gpu_clock_rate_khz": props.clock_rate,
        "gpu_l2_bytes": props.L2_cache_size,
        "gpu_mem_clock_khz": props.memory_clock_rate,
        "gpu_mem_bus_width": props.memory_bus_width,
        "gpu_max_threads_per_sm": props.max_threads_per_multi_processor,
        "gpu_peak_bandwidth_gbps": peak_bandwidth_gbps(props),
    }


def peak_bandwidth_gbps(props) -> float:
    """Memory bandwidth in GB/s of torch's device properties `props`:
    double data rate, two transfers a clock over the bus."""
    return 2 * props.memory_bus_width * props.memory_clock_rate / (1e6 * 8)
