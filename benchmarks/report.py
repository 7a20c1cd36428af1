"""Summarizes a pytest-benchmark JSON of nvfuse's benchmarks: a table of
% of copy bandwidth per case (nvfuse, eager, torch.compile) and nvfuse's
speed-up over torch.compile, a summary JSON, and a PNG plot.

    python3 benchmarks/report.py pointwise.json [--out-prefix pointwise]
"""

import argparse
import json
import math
import re
from collections import defaultdict

SIZE_ORDER = ["1MB", "4MB", "16MB", "64MB", "256MB", "1GB"]


def parse(path):
    """{(test, case, dtype, size): {executor: entry}} from the JSON."""
    with open(path) as f:
        data = json.load(f)
    rows = defaultdict(dict)
    for bench in data["benchmarks"]:
        params = bench.get("params") or {}
        executor = params.get("executor")
        if executor is None:
            continue
        key = (
            bench["name"].split("[")[0],
            params.get("case", ""),
            params.get("dtype", ""),
            params.get("size", params.get("shape", "")),
        )
        rows[key][executor] = {
            "median_us": bench["stats"]["median"] * 1e6,
            **bench.get("extra_info", {}),
        }
    return rows


def summarize(rows):
    summary = []
    for (test, case, dtype, size), by_executor in sorted(
        rows.items(),
        key=lambda kv: (
            kv[0][0],
            kv[0][1],
            kv[0][2],
            SIZE_ORDER.index(kv[0][3]) if kv[0][3] in SIZE_ORDER else 99,
        ),
    ):
        row = {"test": test, "case": case, "dtype": dtype, "size": size}
        for executor, entry in by_executor.items():
            row[f"{executor}_us"] = round(entry["median_us"], 2)
            row[f"{executor}_pct_copy"] = entry.get("pct_of_copy")
        if "nvfuse_us" in row and "compile_us" in row:
            row["speedup_vs_compile"] = round(row["compile_us"] / row["nvfuse_us"], 3)
        if "nvfuse_us" in row and "eager_us" in row:
            row["speedup_vs_eager"] = round(row["eager_us"] / row["nvfuse_us"], 3)
        summary.append(row)
    return summary


def print_table(summary):
    header = (
        f"{'case':<29}{'dtype':<6}{'size':>11}{'nvfuse %':>10}{'eager %':>9}"
        f"{'compile %':>11}{'vs compile':>12}{'nvfuse us':>11}"
    )
    print(header)
    print("-" * len(header))
    for row in summary:

        def pct(name):
            value = row.get(f"{name}_pct_copy")
            return f"{value:.1f}" if value is not None else "-"

        speedup = row.get("speedup_vs_compile")
        print(
            f"{row['case']:<29}{row['dtype']:<6}{row['size']:>11}{pct('nvfuse'):>10}"
            f"{pct('eager'):>9}{pct('compile'):>11}"
            f"{(f'{speedup:.2f}x' if speedup else '-'):>12}"
            f"{row.get('nvfuse_us', float('nan')):>11.1f}"
        )
    speedups = [r["speedup_vs_compile"] for r in summary if r.get("speedup_vs_compile")]
    if speedups:
        geomean = math.exp(sum(math.log(s) for s in speedups) / len(speedups))
        print(
            f"\ngeometric-mean speed-up over torch.compile: {geomean:.3f}x "
            f"({len(speedups)} cases; slowest {min(speedups):.2f}x)"
        )


def plot(summary, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = defaultdict(list)
    for row in summary:
        groups[(row["case"], row["dtype"])].append(row)
    n = len(groups)
    cols = min(4, n)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    for ax, ((case, dtype), entries) in zip(axes.flat, sorted(groups.items())):
        sizes = [e["size"] for e in entries]
        for executor, style in (("nvfuse", "o-"), ("compile", "s--"), ("eager", "^:")):
            values = [e.get(f"{executor}_pct_copy") for e in entries]
            if any(v is not None for v in values):
                ax.plot(
                    sizes,
                    [v if v is not None else float("nan") for v in values],
                    style,
                    label=executor,
                )
        ax.axhline(90, color="gray", linewidth=0.8)
        ax.set_title(f"{case} ({dtype})", fontsize=9)
        ax.set_ylim(0, 105)
        ax.set_ylabel("% of copy bandwidth", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("json", help="pytest-benchmark --benchmark-json output")
    parser.add_argument(
        "--out-prefix", default=None, help="writes <prefix>_summary.json and <prefix>.png"
    )
    args = parser.parse_args()
    summary = summarize(parse(args.json))
    print_table(summary)
    prefix = args.out_prefix or re.sub(r"\.json$", "", args.json)
    with open(f"{prefix}_summary.json", "w") as f:
        json.dump(summary, f, indent=1)
    plot(summary, f"{prefix}.png")
    print(f"wrote {prefix}_summary.json and {prefix}.png")


if __name__ == "__main__":
    main()
