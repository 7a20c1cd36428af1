"""Workloads shared by the tests, the benchmarks and the tools: fusion
definitions with their torch references (normalizations, loss and norm
blocks, transformer blocks, model blocks for torch.compile, the
tensor-parallel blocks) and the GPU timing harness (CUDA-event timing, the
L2 flush). Importable from the repository root: pytest puts it on the path
(`pythonpath` in pyproject.toml), and the tools add the root themselves.
"""
