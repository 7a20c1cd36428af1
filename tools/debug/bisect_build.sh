#!/usr/bin/env bash
# Builds the extension in variants and runs tools/debug/raise_errors.py
# against each, to find which build setting breaks error messages.
set -u
cd "$(dirname "$0")/../.."
echo "== toolchain"; g++ --version | head -1; ld --version | head -1
python3 -c "import sys; print(sys.version)"; ldd "$(which python3)" | grep -E "stdc|libpython" || true
run_variant() {
  local name=$1; shift
  local dir=build/bisect_$name
  cmake -S . -B $dir -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >$dir.cmake.log 2>&1 || { echo "$name: cmake failed"; tail -5 $dir.cmake.log; return; }
  ninja -C $dir _C >$dir.build.log 2>&1 || { echo "$name: build failed"; tail -20 $dir.build.log; return; }
  local so=$(ls $dir/_C*.so)
  mkdir -p $dir/py && cp -r nvfuse_py/nvfuse $dir/py/ && cp $so $dir/py/nvfuse/
  echo "== $name: exported=$(nm -D --defined-only $so | wc -l) codecvt/M_insert=$(nm -D --defined-only $so | grep -cE 'codecvt|_M_insert[^_]') stdc++=$(ldd $so | grep -c stdc)"
  grep -o '\-static[a-z+-]*' $dir/build.ninja | sort -u | head -3
  PYTHONPATH=$dir/py python3 tools/debug/raise_errors.py 2>&1 | tail -4; echo "rc=$?"
}
run_variant default
run_variant noextras -DNVFUSE_MODULE_OPTIONS=NO_EXTRAS
run_variant cxx20 -DCMAKE_CXX_STANDARD=20 -DNVFUSE_MODULE_OPTIONS=NO_EXTRAS
grep -m1 -A3 "LINK_FLAGS\|_C.cpython" build/bisect_default/build.ninja | head -8
