"""The kernels a zoo model's step would generate, found without a GPU: the
step runs on the CPU through backend="nvfuse" (each region on the
reference evaluator), and each region's first call is cut and its CUDA
source generated as a GPU run would (FusionDefinition.cuda_code_for:
later parts for what the earlier ones return; sm_90 defaults), each
kernel compiled with NVRTC. Prints one line per region (its segments by
kind and its kernels, the parts whose scheduler declines its inputs with
why: on a GPU they run on the reference evaluator, op by op) and the
totals: regions, fused segments, kernels, declined parts and the kernels
NVRTC rejects. A change to the partition or the translations is compared
before and after this way.

    python3 tools/zoo_kernels_check.py resnet training [tiny|small] [fp32] [channels_last=0|1]

The default size is tiny, the default dtype bf16 (the benchmark's);
`channels_last=...` sets the backend's option of that name.
"""

import collections
import os
import re
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from nvfuse import _C  # noqa: E402
from nvfuse.errors import NvfuseError, UnsupportedError  # noqa: E402
from tools.zoo_regions_check import first_region_calls  # noqa: E402

KERNEL_NAME = re.compile(r'extern "C" __global__ void (?:__launch_bounds__\([^)]*\) )?(\w+)\(')


# A fusion the segmenter cuts prints each part's source after a header.
PART_HEADER = re.compile(r"^// ==== nvfuse segment:.*$", re.M)


def kernels_of(code):
    """(kernel name, its compilation unit) of every kernel in `code`."""
    return [(name, unit) for unit in PART_HEADER.split(code) for name in KERNEL_NAME.findall(unit)]


def compiles(unit, name):
    try:
        return _C.nvrtc_compile(unit, name, 90)["bytes"] > 0
    except NvfuseError:
        return False


# A part of a cut fusion that runs on the reference evaluator says so in
# its place in the code.
REFERENCE_NOTE = re.compile(r"^// \(runs on the ATen reference evaluator: (.*)$", re.M)


def check_region(fd, args):
    """(segment kinds, kernel names, declined parts with why, rejected
    kernels) of one region's call: its CUDA source as a GPU run of these
    arguments would generate it (later parts compiled for what earlier
    ones return)."""
    kinds = collections.Counter(segment.segment_kind for segment in fd.segment(args))
    try:
        code = fd.cuda_code_for(args)
    except UnsupportedError as e:  # an uncut fusion its scheduler declines
        return kinds, [], [str(e)], []
    kernels, rejected = [], []
    for name, unit in kernels_of(code):
        kernels.append(name)
        if not compiles(unit, name):
            rejected.append(name)
    return kinds, kernels, REFERENCE_NOTE.findall(code), rejected


def main():
    name, step_kind, words = sys.argv[1], sys.argv[2], sys.argv[3:]
    size = "small" if "small" in words else "tiny"
    dtype = torch.float32 if "fp32" in words else torch.bfloat16
    options = {
        key: bool(int(value))
        for key, _, value in (w.partition("=") for w in words if w.startswith("channels_last="))
    }
    calls = first_region_calls(name, step_kind, size, dtype, "cpu", options)
    totals = collections.Counter()
    for i, (module, args) in enumerate(calls):
        kinds, kernels, declined, rejected = check_region(module.definition_for(args), args)
        print(f"region {i} ({module.name}): {dict(kinds)} kernels={len(kernels)}", end="")
        problems = {"declined": len(declined), "rejected": rejected}
        print("".join(f" {k}={v}" for k, v in problems.items() if v))
        for why in declined:
            print(f"  declined: {why[:300]}")
        totals.update(kinds)
        totals.update(
            regions=1,
            kernels=len(kernels),
            declined=len(declined),
            rejected=len(rejected),
        )
    print(
        f"{name} {step_kind} ({size}, {str(dtype).replace('torch.', '')}): "
        f"{totals['regions']} regions, {totals['fused']} fused segments, "
        f"{totals['kernels']} kernels, {totals['aten']} ATen and {totals['view']} view "
        f"segments, {totals['declined']} declined, {totals['rejected']} rejected by NVRTC"
    )


if __name__ == "__main__":
    main()
