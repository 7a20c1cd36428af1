"""Kernel time of long chains of transcendental ops (sin, exp, tanh, sigmoid) at 64 MB, with
the pointwise scheduler's heavy-math budget off (0) and at its default (64), in one
process (CUDA events, median of 30). Needs a GPU.

    python3 tools/pointwise_budget_speed.py
"""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # workloads
from nvfuse import DataType, _C  # noqa: E402
from workloads.transcendental_chain import chain_fd as chain  # noqa: E402


def kernel_us(fn, iters=30):
    for _ in range(3):
        fn()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(iters):
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e) * 1e3)
    return sorted(times)[len(times) // 2]


base = _C.pointwise_tuning()
for steps in (2, 5):
    for nv, dt in ((DataType.Float, torch.float32), (DataType.BFloat16, torch.bfloat16)):
        x = torch.randn((64 << 20) // dt.itemsize // 4096, 4096, device="cuda", dtype=dt)
        row = []
        for budget in (0, 64):
            _C.set_pointwise_tuning(*base[:5], heavy_math_budget=budget)
            fd = chain(steps, nv)
            row.append(f"budget {budget}: {kernel_us(lambda: fd.execute([x])):8.1f} us")
        _C.set_pointwise_tuning(*base)
        print(f"chain x{steps} ({4 * steps} heavy) {str(dt):15}", "  ".join(row), flush=True)
