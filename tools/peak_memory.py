"""What is alive at a zoo model step's peak of GPU memory, on a GPU machine:
the step runs under torch's allocator history, the trace is replayed to
find the moment most bytes were allocated, and the blocks alive then are
listed largest first with the frames that allocated them (the compiled
graph's line or nvfuse's region). Compare a backend with Inductor to see
which tensors make the difference.

    python3 tools/peak_memory.py resnet inference [nvfuse|inductor|eager] [top]
"""

import sys

import torch

sys.path.insert(0, ".")
import nvfuse.dynamo  # noqa: E402,F401 (registers the backend)
from workloads.model_zoo import build  # noqa: E402


def step_of(name, training, backend):
    torch._dynamo.reset()
    zoo = build(name, "bench")
    batch = zoo.bench_batch("cuda", torch.bfloat16, training)
    model = zoo.model if backend == "eager" else torch.compile(zoo.model, backend=backend)
    return zoo.step(model, batch, training)


def live_at_peak(trace):
    """The trace's allocations alive at its highest point: (peak bytes,
    {address: event})."""
    live, total, peak, at_peak = {}, 0, 0, {}
    for event in trace:
        if event["action"] == "alloc":
            live[event["addr"]] = event
            total += event["size"]
            if total > peak:
                peak, at_peak = total, dict(live)
        elif event["action"] in ("free_requested",) and event["addr"] in live:
            total -= live.pop(event["addr"])["size"]
    return peak, at_peak


def where(event, depth=3):
    """The allocating frames a reader can act on: not torch's own."""
    frames = [
        f"{f['filename'].split('/')[-1]}:{f['line']} {f['name']}"
        for f in event.get("frames", [])
        if "torch/" not in f["filename"] or "eval_with_key" in f["filename"]
    ]
    return " < ".join(frames[:depth]) or "(no Python frame)"


def main():
    name, step_kind = sys.argv[1], sys.argv[2]
    backend = sys.argv[3] if len(sys.argv) > 3 else "nvfuse"
    top = int(sys.argv[4]) if len(sys.argv) > 4 else 25
    step = step_of(name, step_kind == "training", backend)
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    torch.cuda.memory._record_memory_history(
        enabled="all", context="alloc", stacks="python", max_entries=1_000_000
    )
    step()
    torch.cuda.synchronize()
    snapshot = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    peak_mb = torch.cuda.max_memory_allocated() / 2**20
    trace = [e for device in snapshot["device_traces"] for e in device]
    step_peak, alive = live_at_peak(trace)
    print(
        f"{name} {step_kind} ({backend}): peak {peak_mb:.0f} MB; "
        f"{before / 2**20:.0f} MB held before the step, "
        f"{step_peak / 2**20:.0f} MB more allocated within it at its peak "
        f"({len(alive)} blocks)"
    )
    for event in sorted(alive.values(), key=lambda e: -e["size"])[:top]:
        print(f"  {event['size'] / 2**20:8.2f} MB  {where(event)}")


if __name__ == "__main__":
    main()
