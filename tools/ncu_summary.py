"""Summarizes Nsight Compute raw CSV reports (tools/ncu_misses.sh): one
line per kernel (the last launch of each kernel name in each report) with
time, DRAM throughput and bytes, L2 hit rate, SM throughput, achieved occupancy,
registers, grid x block (x cluster), warp instructions executed, and the
largest warp stall reasons in cycles per issued instruction (three, or
NCU_STALLS of them).

    NCU_STALLS=8 python3 tools/ncu_summary.py REPORT.csv ...
"""

import csv
import io
import os
import sys

STALL_PREFIX = "smsp__average_warps_issue_stalled_"
STALL_SUFFIX = "_per_issue_active.ratio"


def rows_of(path):
    text = open(path, errors="replace").read()
    start = text.find('"ID"')
    if start < 0:
        return []
    reader = csv.reader(io.StringIO(text[start:]))
    header = next(reader)
    next(reader, None)  # units
    return [dict(zip(header, row)) for row in reader if len(row) == len(header)]


def number(row, key, scale=1.0):
    try:
        return float(row.get(key, "").replace(",", "")) * scale
    except ValueError:
        return float("nan")


def first_key(row, *candidates, contains=None):
    """The first of `candidates` the report has, else the first column
    that contains every part of `contains` (metric names vary by GPU and
    Nsight Compute version)."""
    for key in candidates:
        if key in row:
            return key
    for key in row:
        if contains and all(part in key for part in contains):
            return key
    return ""


def summarize(path):
    last = {}
    for row in rows_of(path):
        # One kernel per name and launch shape: a two-kernel fusion's
        # kernels may share a name; later launches replace earlier ones.
        key = (
            row.get("Kernel Name", "?"),
            row.get("launch__grid_size"),
            row.get("launch__block_size"),
        )
        last[key] = row
    target = os.path.basename(path)[: -len(".csv")].replace("-", ":")
    lines = []
    for (name, _, _), row in last.items():
        dram_pct = first_key(
            row,
            "dram__throughput.avg.pct_of_peak_sustained_elapsed",
            "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
            contains=("dram", "throughput", "pct_of_peak_sustained_elapsed"),
        )
        read = first_key(row, "dram__bytes_read.sum", contains=("dram__bytes_read", ".sum"))
        write = first_key(row, "dram__bytes_write.sum", contains=("dram__bytes_write", ".sum"))
        stalls = sorted(
            (
                (number(row, k), k[len(STALL_PREFIX) : -len(STALL_SUFFIX)])
                for k in row
                if k.startswith(STALL_PREFIX)
                and k.endswith(STALL_SUFFIX)
                and not k.endswith("not_issued" + STALL_SUFFIX)
            ),
            reverse=True,
        )[: int(os.environ.get("NCU_STALLS", "3"))]
        # Warp instructions executed: what an issue-bound kernel's time
        # follows (the InstructionStats section).
        inst = first_key(
            row,
            "smsp__inst_executed.sum",
            "sm__inst_executed.sum",
            contains=("inst_executed", ".sum"),
        )
        dram_bytes = number(row, read) + number(row, write)
        if dram_bytes != dram_bytes:  # no byte counts: rate times duration
            dram_bytes = number(row, "dram__bytes.sum.per_second") * number(
                row, "gpu__time_duration.sum", 1e-9
            )
        cluster = row.get("launch__cluster_dim_x", "")
        lines.append(
            f"{target:<46} {name[:34]:<34} {number(row, 'gpu__time_duration.sum', 1e-3):8.1f} us "
            f"dram {number(row, dram_pct):5.1f}% "
            f"{dram_bytes / 1e6:8.1f} MB  l2 hit {number(row, 'lts__t_sector_hit_rate.pct'):5.1f}% "
            f"sm {number(row, 'sm__throughput.avg.pct_of_peak_sustained_elapsed'):5.1f}% "
            f"occ {number(row, 'sm__warps_active.avg.pct_of_peak_sustained_active'):5.1f}% "
            f"inst {number(row, inst) / 1e6:6.2f}M "
            f"r{row.get('launch__registers_per_thread', '?')} "
            f"{row.get('launch__grid_size', '?')}x{row.get('launch__block_size', '?')}"
            + (f" c{cluster}" if cluster not in ("", "0", "1") else "")
            + "  stalls "
            + ", ".join(f"{r} {v:.1f}" for v, r in stalls)
        )
    return lines or [f"{target:<46} (no kernels in the report)"]


def main():
    for path in sys.argv[1:]:
        for line in summarize(path):
            print(line)


if __name__ == "__main__":
    main()
