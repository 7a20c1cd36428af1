"""Where one zoo model's step under backend="nvfuse" reaches its peak of
allocated GPU memory, on a GPU machine: the step's peak, then the spans
between region calls (a region's own call, and the ATen calls before the
next one) with the most memory allocated at their peak, each with the
memory held when the span began and the region that ended it. Inductor's
peak is printed next to it for the same step.

    python3 tools/zoo_peak.py convnext inference
"""

import sys

import torch

sys.path.insert(0, ".")
import nvfuse.dynamo  # noqa: E402,F401 (registers the backend)
from nvfuse.dynamo.region import FusedRegion  # noqa: E402
from workloads.model_zoo import build  # noqa: E402

MB = 2**20


def step_of(name, training, backend):
    torch._dynamo.reset()
    zoo = build(name, "bench")
    batch = zoo.bench_batch("cuda", torch.bfloat16, training)
    return zoo.step(torch.compile(zoo.model, backend=backend), batch, training)


def step_peak(step):
    step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    step()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated()


def spans_of_regions(step):
    """(peak, held at the start, what ran) for each span of one step: each
    region's call, and the ATen calls between two regions."""
    spans = []
    started = {"held": 0, "name": "step start"}
    original = FusedRegion.forward

    def end_span(name):
        torch.cuda.synchronize()
        spans.append((torch.cuda.max_memory_allocated(), started["held"], started["name"]))
        torch.cuda.reset_peak_memory_stats()
        started.update(held=torch.cuda.memory_allocated(), name=name)

    def forward(self, *args):
        region = f"region {id(self) % 10000} {self.node_targets()[:5]}"
        end_span(f"the call of {region}")
        out = original(self, *args)
        end_span(f"the ATen calls after {region}")
        return out

    FusedRegion.forward = forward
    try:
        torch.cuda.reset_peak_memory_stats()
        started["held"] = torch.cuda.memory_allocated()
        step()
        end_span("step end")
    finally:
        FusedRegion.forward = original
    return spans


def main():
    name, step_kind = sys.argv[1], sys.argv[2]
    training = step_kind == "training"
    step = step_of(name, training, "nvfuse")
    print(f"{name} {step_kind}: nvfuse peak {step_peak(step) / MB:.0f} MB")
    spans = spans_of_regions(step)
    for peak, held, where in sorted(spans, key=lambda s: -s[0])[:8]:
        print(f"  peak {peak / MB:7.0f} MB, held at start {held / MB:7.0f} MB: {where}")
    del step
    inductor = step_of(name, training, "inductor")
    print(f"{name} {step_kind}: Inductor peak {step_peak(inductor) / MB:.0f} MB")


if __name__ == "__main__":
    main()
