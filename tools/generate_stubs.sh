#!/usr/bin/env bash
# Regenerates nvfuse_py/nvfuse/_C.pyi (the type stub of the C++ module)
# from the installed nvfuse with pybind11-stubgen. Run after changing the
# bindings; tests_py/test_type_stubs.py fails while the stub is stale.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q pybind11-stubgen
out=$(mktemp -d)
python3 -m pybind11_stubgen nvfuse._C -o "$out" --ignore-unresolved-names Number
# pybind11 spells Python numbers `Number`; the stub names what it takes.
sed -e 's/\bNumber\b/bool | int | float | complex/g' "$out/nvfuse/_C.pyi" > nvfuse_py/nvfuse/_C.pyi
rm -rf "$out"
echo "wrote nvfuse_py/nvfuse/_C.pyi"
