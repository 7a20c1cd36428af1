"""Runs the real-model zoo (workloads/model_zoo.py) through
torch.compile(backend="nvfuse"), an inference step and a training step
each, against eager, and prints per model: the largest relative errors of
the outputs and the gradients, the share of non-GEMM ops nvfuse ran, and
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
from workloads import model_zoo  # noqa: E402


def _run(name, size, device, dtype, training):
    import copy

    zoo = model_zoo.build(name, size)
    model = zoo.model.to(device).train(training)
    eager = copy.deepcopy(model)
    compiled = torch.compile(model, backend="nvfuse")
    batch = zoo.batch(device)
    autocast = torch.autocast(device, dtype=torch.bfloat16, enabled=dtype == "bf16")
    results = {}
    for label, fn in (("eager", eager), ("nvfuse", compiled)):
        start = time.perf_counter()
        with autocast, torch.set_grad_enabled(training):
            out = fn(**batch)
            loss = zoo.loss(out)
            if training:
                loss.backward()
        results[label] = (zoo.logits(out).detach(), loss.detach(), time.perf_counter() - start)
    errors = {"output": model_zoo.relative_error(results["nvfuse"][0], results["eager"][0])}
    if training:
        errors["gradient"] = max(model_zoo.gradient_errors(model, eager).values())
        errors["buffer"] = max(model_zoo.buffer_errors(model, eager).values(), default=0.0)
    return errors, results["nvfuse"][2]


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
            try:
                errors, seconds = _run(name, args.size, args.device, args.dtype, training)
            except Exception as error:  # noqa: BLE001 (a report, not a test)
                print(f"{name} {step}: FAILED {type(error).__name__}: {str(error)[:300]}")
                traceback.print_exc(limit=-3)
                continue
            reports = nvfuse.dynamo.reports()
            fused = sum(r.fused_ops for r in reports)
            total = sum(r.non_gemm_ops for r in reports)
            shown = ", ".join(f"{k} {v:.1e}" for k, v in errors.items())
            print(
                f"{name} {step}: {shown}; nvfuse ran {fused} of {total} non-GEMM ops; "
                f"first call {seconds:.1f} s"
            )
            for report in reports:
                for _, target, reason in report.unfused:
                    left[(target, reason)] += 1
    print("\nATen calls left outside nvfuse, over all graphs:")
    for (target, reason), count in left.most_common():
        print(f"  {count:4d}  {target}: {reason}")


if __name__ == "__main__":
    main()
