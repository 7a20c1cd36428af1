"""The table of benchmarks/test_models.py's JSON: per model and step, ms
per step for nvfuse, eager and Inductor, nvfuse's speed-up over each, first
call, peak memory, where nvfuse's GPU time went, and the host's enqueue
and wall time of the same steps.

    python3 benchmarks/models_report.py models.json [more.json ...]
"""

import argparse
import json
import math
from collections import defaultdict


def rows_of(paths):
    """The cases of the JSON files at `paths` (one file per model when
    tools/models_bench.sh runs them apart), by (model, step) and executor;
    an empty or unreadable file (a run cut off) adds none."""
    benchmarks = []
    for path in paths:
        try:
            with open(path) as f:
                benchmarks += json.load(f)["benchmarks"]
        except (OSError, ValueError, KeyError):
            print(f"(no results in {path})")
    rows = defaultdict(dict)
    for bench in benchmarks:
        params = bench.get("params") or {}
        if "model_name" not in params:
            continue
        entry = {"ms": bench["stats"]["median"] * 1e3, **bench.get("extra_info", {})}
        rows[(params["model_name"], params["step"])][params["executor"]] = entry
    return rows


def _split(entry):
    split = entry.get("gpu_ms") or {}
    parts = [f"{k} {v:.2f}" for k, v in split.items() if k not in ("kernels", "top") and v]
    return f"{', '.join(parts)} ({split.get('kernels', '?')} kernels)"


def _print_variant(rows, executor):
    """The rows where backend variant `executor` ran: its ms per step
    against plain nvfuse's and Inductor's."""
    lines = []
    for (model, step), by in sorted(rows.items()):
        if executor in by:
            ms = by[executor]["ms"]
            against = "  ".join(
                f"{k} {by[k]['ms']:.2f} ({by[k]['ms'] / ms:.2f}x)"
                for k in ("nvfuse", "compile")
                if k in by
            )
            lines.append(f"  {model:<10}{step:<10}{ms:8.2f}   {against}")
    if lines:
        print(f"\n{executor}, ms per step (and its speedup over each):")
        print("\n".join(lines))


def _print_host_times(rows):
    """Per case, the step's GPU time against the host's: its median
    enqueue and wall time over the same rounds (JSONs written before the
    harness recorded them have none)."""
    lines = []
    for (model, step), by in sorted(rows.items()):
        cells = [
            f"{executor} {by[executor]['ms']:.2f} / {by[executor]['host_enqueue_us'] / 1e3:.2f}"
            f" / {by[executor]['host_wall_us'] / 1e3:.2f}"
            for executor in ("nvfuse", "compile")
            if "host_wall_us" in by.get(executor, {})
        ]
        if cells:
            lines.append(f"  {model:<10}{step:<10}" + "   ".join(cells))
    if lines:
        print("\nms per step, GPU / host enqueue / host wall (nvfuse | Inductor):")
        print("\n".join(lines))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json", nargs="+")
    parser.add_argument("--kernels", action="store_true", help="list each case's top kernels")
    args = parser.parse_args()
    rows = rows_of(args.json)
    print(
        f"{'model':<10}{'step':<10}{'eager':>8}{'nvfuse':>8}{'Inductor':>9}"
        f"{'vs Ind.':>8}{'vs eager':>9}{'first s':>16}{'peak MB':>18}"
    )
    speedups = defaultdict(list)
    for (model, step), by in sorted(rows.items()):
        ms = {k: by[k]["ms"] for k in ("eager", "nvfuse", "compile") if k in by}
        vs_ind = ms["compile"] / ms["nvfuse"] if {"compile", "nvfuse"} <= ms.keys() else None
        vs_eager = ms["eager"] / ms["nvfuse"] if {"eager", "nvfuse"} <= ms.keys() else None
        if vs_ind:
            speedups[step].append(vs_ind)
        first = "/".join(
            f"{by[k].get('first_call_s', 0):.1f}" for k in ("nvfuse", "compile") if k in by
        )
        peak = "/".join(str(by[k].get("peak_mb", "-")) for k in ("nvfuse", "compile") if k in by)
        print(
            f"{model:<10}{step:<10}"
            + "".join(
                f"{ms.get(k, float('nan')):>{w}.2f}"
                for k, w in (("eager", 8), ("nvfuse", 8), ("compile", 9))
            )
            + f"{(f'{vs_ind:.2f}x' if vs_ind else '-'):>8}{(f'{vs_eager:.2f}x' if vs_eager else '-'):>9}"
            + f"{first:>16}{peak:>18}"
        )
    for step, values in speedups.items():
        geomean = math.exp(sum(math.log(v) for v in values) / len(values))
        print(f"geomean nvfuse vs Inductor, {step}: {geomean:.2f}x over {len(values)} models")
    for variant in ("nvfuse-channels-last", "nvfuse-nchw"):
        _print_variant(rows, variant)
    _print_host_times(rows)
    if not any(entry.get("gpu_ms") for by in rows.values() for entry in by.values()):
        return  # a run without the split (NVFUSE_BENCH_GPU_SPLIT=0)
    print("\nGPU ms per step by kernel author (nvfuse | Inductor):")
    for (model, step), by in sorted(rows.items()):
        for executor in ("nvfuse", "compile"):
            if by.get(executor, {}).get("gpu_ms"):
                print(f"  {model:<10}{step:<10}{executor:<8} {_split(by[executor])}")
                if args.kernels:
                    for name, kind, ms, count in (by[executor].get("gpu_ms") or {}).get("top", []):
                        print(f"      {ms:8.3f} ms {count:4d}x {kind:<7}{name}")


if __name__ == "__main__":
    main()
