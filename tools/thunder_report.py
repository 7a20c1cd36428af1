"""Per model: the fusions Thunder's nvFuser executor hands nvfuse, the
segments of each, nvfuse's kernel launches per training step, and the step
time against Thunder without its nvFuser executor and against eager.
Run on a GPU machine with lightning-thunder installed:

    python3 tools/thunder_report.py [--steps N]
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests_py"))

import torch  # noqa: E402

from clients.thunder_models import CASES, make_case, relative_error  # noqa: E402
from clients.thunder_steps import (  # noqa: E402
    import_thunder,
    loss_of,
    nvfuse_fusions,
    thunder_executors,
)


def step_time_ms(fn, inputs, steps):
    def step():
        out = fn(*inputs)
        loss_of(out).backward()

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / steps * 1e3


def nvfuse_kernels_per_step(fn, inputs):
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        loss_of(fn(*inputs)).backward()
        torch.cuda.synchronize()
    names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    return sum(n.startswith("nvfuse_") for n in names), len(names)


def report(case, dtype, sdpa, thunder, nvfuserex, steps):
    model, inputs = make_case(case, dtype)
    jitted = thunder.jit(model, executors=thunder_executors(thunder, nvfuserex, sdpa))
    out = jitted(*inputs)
    loss_of(out).backward()
    fusions = nvfuse_fusions(thunder, jitted)
    segments = [len(fd.segment_summary()) if fd is not None else -1 for _, _, fd in fusions]
    fused_kernels, all_kernels = nvfuse_kernels_per_step(jitted, inputs)
    t_nvfuse = step_time_ms(jitted, inputs, steps)
    others = [e for e in thunder.get_default_executors() if e.name != "nvfuser"]
    baseline, _ = make_case(case, dtype)
    t_thunder = step_time_ms(thunder.jit(baseline, executors=others), inputs, steps)
    eager, _ = make_case(case, dtype)
    t_eager = step_time_ms(eager, inputs, steps)
    with torch.no_grad():
        err = relative_error(jitted(*inputs), eager(*inputs)) if case != "dropout" else float("nan")
    name = f"{case} {str(dtype)[6:]}{' +sdpa_ex' if sdpa else ''}"
    print(
        f"| {name} | {len(fusions)} | {segments} | {fused_kernels}/{all_kernels} | "
        f"{t_nvfuse:.3f} | {t_thunder:.3f} | {t_eager:.3f} | {err:.2e} |",
        flush=True,
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    thunder, nvfuserex = import_thunder()
    print(
        f"thunder {thunder.__version__}; nvfuse as nvFuser {nvfuserex.version}; "
        f"{torch.cuda.get_device_name()}"
    )
    print(
        "| model | fusions | segments per fusion | nvfuse/all kernels per step | "
        "step ms (nvfuse) | step ms (Thunder minus nvFuser) | step ms (eager) | "
        "rel. err. vs eager |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for case in CASES:
        for dtype in (torch.float32, torch.bfloat16):
            for sdpa in (False, True) if case in ("gpt_block", "llama_block") else (False,):
                try:
                    report(case, dtype, sdpa, thunder, nvfuserex, args.steps)
                except Exception as e:  # one failing model must not hide the rest
                    print(
                        f"| {case} {dtype} sdpa={sdpa} | FAILED: {type(e).__name__}: "
                        f"{str(e).splitlines()[0][:200]} |",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
