#!/usr/bin/env bash
# The GPU check: run from the repository root on a GPU machine as one
# command. Builds nvfuse there, runs the GPU tests and the rest of the pytest
# suite, the quickstart on the GPU, and a benchmark smoke run (sizes from
# NVFUSE_BENCH_SIZES, default 1MB,64MB,1GB; NVFUSE_BENCH_SIZES=none skips
# it) plus the normalization benchmarks (shapes from NVFUSE_BENCH_SHAPES,
# default 2048x1600,32768x8192,4096x65536), and prints a short summary last. Logs and the benchmark JSON/PNG go to
# $OUT when it is set (the device tool), else to build/gpu.
set -uo pipefail
cd "$(dirname "$0")/.."
LOG_DIR="${OUT:-build/gpu}"
mkdir -p "$LOG_DIR"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
export PYTHONUNBUFFERED=1
export NVFUSE_CACHE_DIR="${NVFUSE_CACHE_DIR:-$PWD/build/gpu/kernel_cache}"
BENCH_SIZES="${NVFUSE_BENCH_SIZES:-1MB,64MB,1GB}"

declare -a NAMES RESULTS
record() { NAMES+=("$1"); RESULTS+=("$2"); }

gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
start=$(date +%s)
if python3 -m pip install --no-build-isolation --no-deps . -Cbuild-dir=build/gpu \
    >"$LOG_DIR/build.log" 2>&1; then
  record build "ok ($(( $(date +%s) - start )) s)"
else
  tail -30 "$LOG_DIR/build.log"
  record build FAILED
fi

python3 -m pytest tests_py -q -p no:cacheprovider -m gpu 2>&1 | tee "$LOG_DIR/gpu_tests.log" | tail -15
record "gpu tests" "$(tail -1 "$LOG_DIR/gpu_tests.log")"

python3 -m pytest tests_py -q -p no:cacheprovider -m "not gpu" 2>&1 | tee "$LOG_DIR/cpu_tests.log" | tail -3
record "other tests" "$(tail -1 "$LOG_DIR/cpu_tests.log")"

if python3 examples/quickstart.py >"$LOG_DIR/quickstart.log" 2>&1; then
  record quickstart "$(tail -1 "$LOG_DIR/quickstart.log")"
else
  tail -20 "$LOG_DIR/quickstart.log"
  record quickstart FAILED
fi

if [ "$BENCH_SIZES" != "none" ]; then
  if NVFUSE_BENCH_SIZES="$BENCH_SIZES" python3 -m pytest benchmarks/test_pointwise.py \
      -q -p no:cacheprovider --benchmark-json="$LOG_DIR/pointwise.json" \
      --benchmark-columns=median >"$LOG_DIR/bench.log" 2>&1; then
    python3 benchmarks/report.py "$LOG_DIR/pointwise.json" --out-prefix "$LOG_DIR/pointwise" \
      | tee "$LOG_DIR/bench_table.txt"
    record benchmarks "$(grep geometric "$LOG_DIR/bench_table.txt" || echo ok)"
  else
    tail -30 "$LOG_DIR/bench.log"
    record benchmarks FAILED
  fi
fi

NORM_SHAPES="${NVFUSE_BENCH_SHAPES:-2048x1600,32768x8192,4096x65536}"
if [ "$BENCH_SIZES" != "none" ]; then
  if NVFUSE_BENCH_SHAPES="$NORM_SHAPES" python3 -m pytest benchmarks/test_normalization.py \
      -q -p no:cacheprovider --benchmark-json="$LOG_DIR/normalization.json" \
      --benchmark-columns=median >"$LOG_DIR/norm_bench.log" 2>&1; then
    python3 benchmarks/report.py "$LOG_DIR/normalization.json" --out-prefix "$LOG_DIR/normalization" \
      | tee "$LOG_DIR/norm_table.txt"
    record "norm bench" "$(grep geometric "$LOG_DIR/norm_table.txt" || echo ok)"
  else
    tail -30 "$LOG_DIR/norm_bench.log"
    record "norm bench" FAILED
  fi
fi

echo
echo "==================== nvfuse GPU check ===================="
echo "GPU: ${gpu:-none found}"
for i in "${!NAMES[@]}"; do
  printf "%-12s %s\n" "${NAMES[$i]}" "${RESULTS[$i]}"
done
failed=0
for r in "${RESULTS[@]}"; do
  case "$r" in *FAILED*|*failed*|*error*) failed=1 ;; esac
done
exit $failed
