"""Workloads shared by the tests, the benchmarks and the tools: fusion
definitions with their torch references (normalizations, loss and norm
blocks, transformer blocks, model blocks for torch.compile, the
tensor-parallel blocks) and the GPU timing harness (CUDA-event timing, the
L2 flush). Importable from the repository root: pytest puts it on the path
(`pythonpath` in pyproject.toml), and the tools add the root themselves.
"""

import importlib.util
import os

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def benchmark_module(name):
    """The module of benchmarks/<name>.py, loaded from its path (the
    benchmark files are pytest modules, not a package): for tools that time
    or inspect the same cases the benchmarks run."""
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(_ROOT, "benchmarks", name + ".py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
