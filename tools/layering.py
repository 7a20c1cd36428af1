"""Prints the include edges between src/ folders that break the layering
(what each folder may depend on) and the folder-level include cycles.
multidevice/runtime/ (compiled into nvfuse_runtime) sits on the runtime
layer: it may use runtime/, runtime/ may not use it (execute in bindings/
picks between them). Exit status 1 when there is either;
tests_py/test_layering.py runs it.

    python3 tools/layering.py
"""

import collections
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")

# Folder -> the folders it may include from (besides itself).
ALLOWED = {
    "ir": set(),
    "ops": {"ir"},
    "frontend": {"ir", "ops"},
    "passes": {"ir", "ops"},
    "schedule": {"ir"},
    "segment": {"ir", "schedule"},
    "codegen": {"ir", "schedule"},
    "multidevice": {"ir", "ops"},
    "runtime": {"ir", "ops", "frontend", "passes", "schedule", "segment", "codegen"},
    "multidevice/runtime": {
        "ir",
        "ops",
        "frontend",
        "passes",
        "schedule",
        "segment",
        "codegen",
        "multidevice",
        "runtime",
    },
    "bindings": None,  # everything
}


def folder_of(path):
    rel = os.path.relpath(path, ROOT).replace(os.sep, "/")
    if rel.startswith("multidevice/runtime/"):
        return "multidevice/runtime"
    return rel.split("/")[0]


def include_edges():
    edges = collections.defaultdict(list)
    for root, _, files in os.walk(ROOT):
        for name in files:
            if not name.endswith((".h", ".cpp", ".cuh")):
                continue
            path = os.path.join(root, name)
            source = folder_of(path)
            for line in open(path):
                m = re.match(r'#include "([a-z_/]+)/[a-z_0-9]+\.(h|cuh)"', line)
                if not m:
                    continue
                target = (
                    "multidevice/runtime"
                    if m.group(1) == "multidevice/runtime"
                    else m.group(1).split("/")[0]
                )
                if target != source:
                    edges[(source, target)].append(os.path.relpath(path, ROOT))
    return edges


def main():
    edges = include_edges()
    broken = [
        (s, t) for (s, t) in edges if ALLOWED.get(s) is not None and t not in ALLOWED.get(s, set())
    ]
    for s, t in sorted(broken):
        print(f"{s} -> {t} is not allowed: {', '.join(sorted(set(edges[(s, t)])))}")
    pairs = {(s, t) for (s, t) in edges}
    cycles = sorted({tuple(sorted((s, t))) for (s, t) in pairs if (t, s) in pairs})
    for a, b in cycles:
        print(f"cycle {a} <-> {b}")
    return 1 if broken or cycles else 0


if __name__ == "__main__":
    sys.exit(main())
