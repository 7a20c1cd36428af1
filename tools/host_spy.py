"""Native host profiles of zoo steps (tools/host_spy.sh runs them).

`steps MODEL STEP BACKEND`: compiles the zoo model's step (as
tools/zoo_profile.py does), runs six warm-up steps, prints WARM and then
runs synchronized steps (as the model benchmark's timed rounds) until it
is killed.

`report RAW MARKER...`: reads py-spy's raw (collapsed) profile, recorded
with --native --idle, and prints per marker (a substring of a frame's
name, such as "native::clone" or "MeanBackward0") how many samples had it
on their stack and the deepest frames those samples ended in: where a
call's host time went, waits on locks included. Then the frames with the
most samples of their own."""

import collections
import os
import re
import sys


def run_steps(model, step, backend):
    import torch

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from tools.zoo_profile import step_of

    run = step_of(model, step == "training", backend)
    for _ in range(6):
        run()
    torch.cuda.synchronize()
    print("WARM", flush=True)
    while True:
        run()
        torch.cuda.synchronize()


def read_stacks(path):
    """(frames, samples) per line of a raw profile, frames outermost first
    and stripped of their file and line."""
    stacks = []
    with open(path) as f:
        for line in f:
            stack, _, count = line.rstrip().rpartition(" ")
            if stack:
                frames = [re.sub(r" \(.*", "", frame)[:90] for frame in stack.split(";")]
                stacks.append((frames, int(count)))
    return stacks


def print_under(stacks, marker, depth=4, top=12):
    tails = collections.Counter()
    for frames, count in stacks:
        hits = [i for i, frame in enumerate(frames) if marker in frame]
        if hits:
            below = frames[hits[-1] + 1 :][-depth:]
            tails[" < ".join(reversed(below)) or "(the marked frame itself)"] += count
    total = sum(count for _, count in stacks)
    marked = sum(tails.values())
    print(f"-- {marker}: {marked} of {total} samples ({100 * marked / max(total, 1):.1f}%)")
    for tail, count in tails.most_common(top):
        print(f"  {count:6d} {tail[:240]}")


def report(path, markers):
    stacks = read_stacks(path)
    for marker in markers:
        print_under(stacks, marker)
    own = collections.Counter()
    for frames, count in stacks:
        own[frames[-1]] += count
    print("-- frames with the most samples of their own:")
    for frame, count in own.most_common(20):
        print(f"  {count:6d} {frame}")


if __name__ == "__main__":
    if len(sys.argv) >= 5 and sys.argv[1] == "steps":
        run_steps(*sys.argv[2:5])
    elif len(sys.argv) >= 3 and sys.argv[1] == "report":
        report(sys.argv[2], sys.argv[3:])
    else:
        sys.exit(__doc__)
