#!/usr/bin/env bash
# The GPU check: run from the repository root on a GPU machine as one
# command. Builds nvfuse there, runs the GPU tests and the rest of the pytest
# suite, the quickstart on the GPU, and a benchmark smoke run (sizes from
# NVFUSE_BENCH_SIZES, default 1MB,64MB,1GB; NVFUSE_BENCH_SIZES=none skips
# it) plus the normalization benchmarks (shapes from NVFUSE_BENCH_SHAPES,
# default 2048x1600,32768x8192,4096x65536) and the transformer-op
# benchmarks and the transformer-block benchmarks (NVFUSE_BENCHES picks
# among pointwise,normalization,transformer_ops,blocks,loss_and_norm_blocks),
# Thunder's own nvFuser tests when its wheel is carried (.whl/, from
# tools/fetch_client_wheels.sh; skips in tools/thunder_skips.txt),
# plus a differential-fuzzing batch (NVFUSE_FUZZ_CASES, default 10000, in
# NVFUSE_FUZZ_WORKERS processes side by side, default 8),
# and prints a short summary last. NVFUSE_CPU_TESTS=0 skips the non-GPU
# half of the suite (CI runs it) for a quicker device call. Logs and the
# benchmark JSON/PNG go to $OUT when it is set (the device tool), else to
# build/gpu.
set -uo pipefail
cd "$(dirname "$0")/.."
export NVFUSE_CACHE_DIR="${NVFUSE_CACHE_DIR:-$PWD/build/gpu/kernel_cache}"
BENCH_SIZES="${NVFUSE_BENCH_SIZES:-1MB,64MB,1GB}"

source tools/gpu_build_step.sh

# Client wheels (tools/fetch_client_wheels.sh), when carried: Thunder for
# the client tests in tests_py/clients.
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
    --upgrade --target /tmp/client_site .whl/*.whl && \
    export PYTHONPATH="/tmp/client_site${PYTHONPATH:+:$PYTHONPATH}"
fi

gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
build_nvfuse

python3 -m pytest tests_py -q -p no:cacheprovider -m gpu 2>&1 | tee "$LOG_DIR/gpu_tests.log" | tail -15
record "gpu tests" "$(tail -1 "$LOG_DIR/gpu_tests.log")"

# Thunder's own nvFuser tests (its wheel ships thunder/tests), with nvfuse
# as nvFuser, when the Thunder wheel was carried; tools/thunder_skips.txt
# lists the tests left out and why.
thunder_tests=$(python3 -c "import importlib.util as u; s = u.find_spec('thunder'); \
print(s.submodule_search_locations[0] + '/tests' if s else '')" 2>/dev/null)
if [ -n "$thunder_tests" ] && [ -d "$thunder_tests" ]; then
  deselect=()
  while read -r test _; do
    deselect+=(--deselect "$test")
  done < <(grep -v '^#' tools/thunder_skips.txt | grep -v '^$')
  # Run from Thunder's tests folder: pytest's node ids (which --deselect
  # matches by prefix) are then the file-relative ids the skip list holds.
  run_thunder() {
    (cd "$thunder_tests" && PYTHONPATH="$OLDPWD/tools${PYTHONPATH:+:$PYTHONPATH}" \
      python3 -m pytest -p thunder_as_nvfuser -q -rfE -p no:cacheprovider "${deselect[@]}" "$@" 2>&1)
  }
  run_thunder test_nvfuser.py test_nvfuser_remat.py \
    | tee "$LOG_DIR/thunder_nvfuser.log" | tail -3
  record "thunder nvfuser" "$(tail -1 "$LOG_DIR/thunder_nvfuser.log")"
  run_thunder test_ops.py test_grad.py -k nvFuser \
    | tee "$LOG_DIR/thunder_ops.log" | tail -3
  record "thunder ops" "$(tail -1 "$LOG_DIR/thunder_ops.log")"
fi

if [ "${NVFUSE_CPU_TESTS:-1}" != 0 ]; then
  python3 -m pytest tests_py -q -p no:cacheprovider -m "not gpu" 2>&1 | tee "$LOG_DIR/cpu_tests.log" | tail -3
  record "other tests" "$(tail -1 "$LOG_DIR/cpu_tests.log")"
fi

# Differential fuzzing on the GPU (tools/fuzz.py): kernels against torch's
# CUDA ops, NVFUSE_FUZZ_CASES of them (default 10000; 0 skips) in
# NVFUSE_FUZZ_WORKERS worker processes side by side, starting at seed
# NVFUSE_FUZZ_SEED (default 0); NVFUSE_FUZZ_SECONDS bounds the batch's time
# (the summary counts the cases run), so that a batch can be split over
# device calls by seed.
if [ "${NVFUSE_FUZZ_CASES:-10000}" != 0 ]; then
  if python3 tools/fuzz.py --cases "${NVFUSE_FUZZ_CASES:-10000}" --seed "${NVFUSE_FUZZ_SEED:-0}" \
      --device cuda --workers "${NVFUSE_FUZZ_WORKERS:-8}" \
      ${NVFUSE_FUZZ_SECONDS:+--time-limit "$NVFUSE_FUZZ_SECONDS"} >"$LOG_DIR/fuzz.log" 2>&1; then
    record "fuzz" "$(tail -1 "$LOG_DIR/fuzz.log")"
  else
    record "fuzz" "FAILED: $(tail -1 "$LOG_DIR/fuzz.log")"
  fi
fi

if python3 examples/quickstart.py >"$LOG_DIR/quickstart.log" 2>&1; then
  record quickstart "$(tail -1 "$LOG_DIR/quickstart.log")"
else
  tail -20 "$LOG_DIR/quickstart.log"
  record quickstart FAILED
fi

# bench NAME LABEL: runs benchmarks/test_NAME.py, writes NAME.json/.png and
# NAME_table.txt, and records the geometric mean under LABEL.
bench() {
  if python3 -m pytest "benchmarks/test_$1.py" -q -p no:cacheprovider \
      --benchmark-json="$LOG_DIR/$1.json" --benchmark-columns=median \
      >"$LOG_DIR/$1_bench.log" 2>&1; then
    python3 benchmarks/report.py "$LOG_DIR/$1.json" --out-prefix "$LOG_DIR/$1" \
      | tee "$LOG_DIR/$1_table.txt"
    record "$2" "$(grep geometric "$LOG_DIR/$1_table.txt" || echo ok)"
  else
    tail -30 "$LOG_DIR/$1_bench.log"
    record "$2" FAILED
  fi
}

BENCHES=",${NVFUSE_BENCHES:-pointwise,normalization,transformer_ops,blocks,loss_and_norm_blocks},"
if [ "$BENCH_SIZES" != "none" ]; then
  [[ $BENCHES == *,pointwise,* ]] && \
    NVFUSE_BENCH_SIZES="$BENCH_SIZES" bench pointwise benchmarks
  [[ $BENCHES == *,normalization,* ]] && \
    NVFUSE_BENCH_SHAPES="${NVFUSE_BENCH_SHAPES:-2048x1600,32768x8192,4096x65536}" \
    bench normalization "norm bench"
  [[ $BENCHES == *,transformer_ops,* ]] && bench transformer_ops "transformer"
  [[ $BENCHES == *,blocks,* ]] && bench blocks "blocks"
  [[ $BENCHES == *,loss_and_norm_blocks,* ]] && bench loss_and_norm_blocks "loss/norm"
fi

echo
echo "==================== nvfuse GPU check ===================="
echo "GPU: ${gpu:-none found}"
print_summary
failed=0
for r in "${RESULTS[@]}"; do
  case "$r" in *FAILED*|*failed*|*error*) failed=1 ;; esac
done
exit $failed
