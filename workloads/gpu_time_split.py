"""Where a step's GPU time goes: torch.profiler's kernels, summed by who
wrote them, so that what a compiler leaves outside its own kernels shows.

- `nvfuse`: nvfuse's generated kernels (named `nvfuse_...`);
- `triton`: Inductor's generated kernels (`triton_...`);
- `gemm`: cuBLAS, CUTLASS and cuDNN GEMMs, convolutions and attention;
- `layout`: copies and layout conversions (memcpy, `direct_copy`,
  `nchwToNhwc`, ...);
- `other`: every other ATen kernel (elementwise, reductions, indexing)."""

import re

import torch

_GEMM = re.compile(
    r"gemm|nvjet|cutlass|xmma|cublas|conv|wgrad|dgrad|fmha|flash|attention|implicit", re.I
)
_LAYOUT = re.compile(r"memcpy|memset|direct_copy|nchwToNhwc|nhwcToNchw|copy_kernel|transpose", re.I)
KINDS = ("nvfuse", "triton", "gemm", "layout", "other")


def kind_of_kernel(name):
    if name.startswith("nvfuse_"):
        return "nvfuse"
    if name.startswith("triton_"):
        return "triton"
    if _LAYOUT.search(name):
        return "layout"
    if _GEMM.search(name):
        return "gemm"
    return "other"


def gpu_time_split(step, top=12):
    """{kind: GPU milliseconds} of one call of `step`, plus `kernels` (how
    many kernels it launched) and `top`: its `top` kernels by time, as
    [name (cut to 90 characters), kind, ms, launches]."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    split = dict.fromkeys(KINDS, 0.0)
    kernels = 0
    by_kernel = []
    for event in prof.key_averages():
        if event.self_device_time_total <= 0:
            continue
        ms = event.self_device_time_total / 1e3
        kind = kind_of_kernel(event.key)
        split[kind] += ms
        kernels += event.count
        by_kernel.append([event.key[:90], kind, round(ms, 3), event.count])
    by_kernel.sort(key=lambda row: -row[2])
    return {
        **{k: round(v, 3) for k, v in split.items()},
        "kernels": kernels,
        "top": by_kernel[:top],
    }
