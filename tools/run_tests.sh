#!/usr/bin/env bash
# Builds and installs nvfuse with its C++ tests, then runs every test that
# needs no GPU: the GoogleTest suite (tests_cpp/) and pytest (tests_py/).
# GPU tests are marked and skip themselves without CUDA. Fails when pytest
# collects no tests (its exit code 5). Builds in the folder a plain
# `pip install .` uses (build/<wheel tag>), so after the README's first
# command only the C++ tests are left to compile.
set -euo pipefail
cd "$(dirname "$0")/.."

export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
python3 -m pip install --no-build-isolation --no-deps . \
  -Cbuild-dir="build/{wheel_tag}" -Ccmake.define.NVFUSE_BUILD_TESTS=ON
CPP_TESTS="$(ls -t build/*/tests_cpp/nvfuse_cpp_tests | head -1)"

# The C++ tests compile generated kernels with NVRTC: the CUDA toolkit's, or
# the nvidia-cuda-nvrtc wheel that torch depends on.
if [ -z "${NVFUSE_NVRTC_LIBRARY:-}" ]; then
  NVFUSE_NVRTC_LIBRARY="$(python3 - <<'PY'
import glob, os
try:
    import nvidia
    for base in nvidia.__path__:
        for path in sorted(glob.glob(os.path.join(base, "*", "lib", "libnvrtc.so.1[23]"))):
            print(path)
            raise SystemExit
except ImportError:
    pass
PY
)"
  [ -n "$NVFUSE_NVRTC_LIBRARY" ] && export NVFUSE_NVRTC_LIBRARY
fi

echo "== GoogleTest (tests_cpp) =="
"$CPP_TESTS" --gtest_brief=1

echo "== pytest (tests_py) =="
set +e
python3 -m pytest tests_py -q -p no:cacheprovider "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: that is a failure" >&2
  exit 1
fi
exit "$status"
