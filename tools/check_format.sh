#!/usr/bin/env bash
# The formatting check CI runs: C++ sources and headers under src/ and
# tests_cpp/ against .clang-format (clang-format 14, the PyPI wheel pinned
# here so that every machine formats alike), Python against ruff's
# formatter and its error rules (pyproject.toml). The device runtime
# (*.cuh) is left as written: its text is embedded in every kernel's
# source, laid out for reading generated code.
#
#     tools/check_format.sh          # check
#     tools/check_format.sh --fix    # rewrite the files instead
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q "clang-format==14.0.6" "ruff==0.17.6"
PYTHON_DIRS=(nvfuse_py tests_py benchmarks tools examples workloads)
mapfile -t CPP < <(git ls-files 'src/*.cpp' 'src/*.h' 'tests_cpp/*.cpp' 'tests_cpp/*.h')
CLANG_FORMAT="$(python3 -c 'import clang_format, os; print(os.path.join(os.path.dirname(clang_format.__file__), "data", "bin", "clang-format"))')"
if [ "${1:-}" = "--fix" ]; then
  "$CLANG_FORMAT" -i "${CPP[@]}"
  python3 -m ruff format "${PYTHON_DIRS[@]}"
  python3 -m ruff check --fix "${PYTHON_DIRS[@]}"
  exit 0
fi
"$CLANG_FORMAT" --dry-run --Werror "${CPP[@]}"
python3 -m ruff format --check "${PYTHON_DIRS[@]}"
python3 -m ruff check "${PYTHON_DIRS[@]}"
echo "format: ${#CPP[@]} C++ files and the Python sources are formatted"
