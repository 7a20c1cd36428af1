#!/usr/bin/env bash
# The whole-model benchmark on a GPU machine, as one device command: builds
# nvfuse (unless NVFUSE_SKIP_BUILD=1), runs benchmarks/test_models.py for
# the models in NVFUSE_BENCH_ZOO (default gpt2,bert), writes the JSON to
# $OUT (else build/gpu) and prints benchmarks/models_report.py's table
# (with each case's top kernels when NVFUSE_BENCH_KERNELS=1).
set -uo pipefail
cd "$(dirname "$0")/.."
export NVFUSE_BENCH_ZOO="${NVFUSE_BENCH_ZOO:-gpt2,bert}"
source tools/gpu_build_step.sh
[ "${NVFUSE_SKIP_BUILD:-0}" = 1 ] || build_nvfuse
json="$LOG_DIR/models_${NVFUSE_BENCH_ZOO//,/_}.json"
python3 -m pytest benchmarks/test_models.py -q -p no:cacheprovider \
  --benchmark-json="$json" >"$LOG_DIR/models_bench.log" 2>&1
record "models bench" "$(tail -1 "$LOG_DIR/models_bench.log")"
grep -E "FAILED|Error" "$LOG_DIR/models_bench.log" | head -20
python3 benchmarks/models_report.py "$json" ${NVFUSE_BENCH_KERNELS:+--kernels}
print_summary
