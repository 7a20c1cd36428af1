"""Kernel time of long chains of transcendental ops (sin, exp, tanh, sigmoid) at 64 MB, with
the pointwise scheduler's heavy-math budget off (0) and at its default (64), in one
process (CUDA events, median of 30). Needs a GPU.

    python3 tools/pointwise_budget_speed.py
"""

import torch
from nvfuse import FusionDefinition, DataType, _C


def chain(steps, nv):
    with FusionDefinition() as fd:
        h = fd.ops.cast(fd.define_tensor([-1, -1], contiguity=True, dtype=nv), DataType.Float)
        for _ in range(steps):
            h = fd.ops.sin(h * 1.01 + 0.1)
            h = fd.ops.exp(h) - 1.0
            h = fd.ops.tanh(h * h)
            h = fd.ops.maximum(h, 0.01) + fd.ops.sigmoid(h)
        fd.add_output(fd.ops.cast(h, nv))
    return fd


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
