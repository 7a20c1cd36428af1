"""Each region of one zoo model's step, run with nvfuse's kernels and again
on the reference evaluator (the same definition on CPU copies of the
region's first inputs), with the worst relative error of every output: a
region whose kernels disagree with the reference is printed with its
definition and segments. A model whose gradients alone are wrong (its
loss right) is narrowed to one region, one output, this way.

    python3 tools/zoo_regions_check.py llama training [small] [fp32|bf16]
"""

import sys

import torch

sys.path.insert(0, ".")
import nvfuse.dynamo  # noqa: E402,F401 (registers the backend)
from nvfuse.dynamo import region  # noqa: E402
from workloads.model_zoo import build  # noqa: E402

TOLERANCE = {torch.float32: 1e-3, torch.bfloat16: 3e-2}


def capture_first_calls():
    """A list that fills, as regions run, with (the region, copies of its
    first call's arguments)."""
    calls = []
    run = region.FusedRegion.forward

    def forward(self, *args):
        out = run(self, *args)
        if not any(seen is self for seen, _ in calls):
            calls.append(
                (self, [a.detach().clone() if isinstance(a, torch.Tensor) else a for a in args])
            )
        return out

    region.FusedRegion.forward = forward
    return calls


def first_region_calls(name, step_kind, size, dtype, device, options=None):
    """(region, copies of its first call's arguments) of every region that
    one step of zoo model `name` ran through backend="nvfuse" (with the
    backend's `options`)."""
    calls = capture_first_calls()
    zoo = build(name, size)
    training = step_kind == "training"
    batch = zoo.bench_batch(device, dtype, training)
    compiled = torch.compile(zoo.model, backend="nvfuse", options=options or {})
    zoo.step(compiled, batch, training)()
    return calls


def worst_errors(fd, args, tolerance):
    """(output index, relative error or 'shape', sizes) of each output
    whose kernels and reference disagree."""
    on_device = fd.execute(args)
    reference = fd.execute([a.cpu() if isinstance(a, torch.Tensor) else a for a in args])
    bad = []
    for k, (got, expected) in enumerate(zip(on_device, reference)):
        got, expected = got.cpu().double(), expected.double()
        if got.shape != expected.shape:
            bad.append((k, "shape", tuple(got.shape)))
            continue
        scale = expected.abs().max().item() if expected.numel() else 0.0
        error = (got - expected).abs().max().item() / (scale + 1e-12) if expected.numel() else 0.0
        if error > tolerance:
            bad.append((k, round(error, 4), tuple(got.shape)))
    return bad


def main():
    name, step_kind = sys.argv[1], sys.argv[2]
    size = sys.argv[3] if len(sys.argv) > 3 else "small"
    dtype = torch.bfloat16 if len(sys.argv) > 4 and sys.argv[4] == "bf16" else torch.float32
    calls = first_region_calls(name, step_kind, size, dtype, "cuda")
    torch.cuda.synchronize()
    for i, (module, args) in enumerate(calls):
        fd = module.definition_for(args)
        bad = worst_errors(fd, args, TOLERANCE[dtype])
        kinds = [(kind, len(ops)) for kind, ops in fd.segment_summary()]
        print(f"region {i} {'BAD' if bad else 'ok'} {bad} segments={kinds}")
        if bad:
            print(fd)
            for kind, ops in fd.segment_summary():
                print("   ", kind, ops)


if __name__ == "__main__":
    main()
