"""Runs the real-model zoo (workloads/model_zoo.py) through
torch.compile(backend="nvfuse"), an inference step and a training step
each, against eager (workloads/zoo_accuracy.py), and prints per model:
whether it is within bounds, the largest relative errors of the outputs,
gradients and running statistics, the share of non-GEMM ops nvfuse ran, and
the ATen calls left outside nvfuse with their reasons, counted.

    python3 tools/zoo_report.py                      # tiny sizes on the CPU
    python3 tools/zoo_report.py --device cuda --size small --dtype bf16
    python3 tools/zoo_report.py llama resnet         # some models only
"""

import argparse
import collections
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402

import nvfuse.dynamo  # noqa: E402
from workloads import model_zoo, zoo_accuracy  # noqa: E402


def _shown(errors):
    return ", ".join(
        f"{k} {v:.1e}" if isinstance(v, float) else f"{k} {v}" for k, v in errors.items()
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", default=list(model_zoo.BUILDERS))
    parser.add_argument("--size", default="tiny", choices=model_zoo.SIZES)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="fp32", choices=["fp32", "bf16"])
    args = parser.parse_args()
    left = collections.Counter()
    for name in args.models:
        for training in (False, True):
            torch._dynamo.reset()
            nvfuse.dynamo.clear_reports()
            step = "training" if training else "inference"
            start = time.perf_counter()
            try:
                errors = zoo_accuracy.step_errors(
                    name, args.size, args.device, args.dtype == "bf16", training
                )
            except Exception as error:  # noqa: BLE001 (a report, not a test)
                print(f"{name} {step}: FAILED {type(error).__name__}: {str(error)[:300]}")
                traceback.print_exc()
                continue
            seconds = time.perf_counter() - start
            reports = nvfuse.dynamo.reports()
            fused = sum(r.fused_ops for r in reports)
            total = sum(r.non_gemm_ops for r in reports)
            verdict = "out of bounds" if zoo_accuracy.over_bounds(errors) else "ok"
            shown = []
            if errors["direct"]:
                shown.append(f"against eager {_shown(errors['direct'])}")
            if errors["nvfuse"]:
                against = "fp32" if args.dtype == "bf16" else "fp64"
                shown.append(
                    f"against {against}: nvfuse {_shown(errors['nvfuse'])}, "
                    f"eager {_shown(errors['eager'])}"
                )
            print(
                f"{name} {step}: {verdict}: {'; '.join(shown)}; "
                f"nvfuse ran {fused} of {total} non-GEMM ops; {seconds:.1f} s"
            )
            for report in reports:
                for _, target, reason in report.unfused:
                    left[(target, reason)] += 1
    print("\nATen calls left outside nvfuse, over all graphs:")
    for (target, reason), count in left.most_common():
        print(f"  {count:4d}  {target}: {reason}")


if __name__ == "__main__":
    main()
