#!/usr/bin/env bash
# The whole-model benchmark on a GPU machine, as one device command: builds
# nvfuse (unless NVFUSE_SKIP_BUILD=1), runs benchmarks/test_models.py once
# per model in NVFUSE_BENCH_ZOO (default gpt2,bert), each run writing its
# own JSON to $OUT (else build/gpu), so that a model cut off by the device
# call's time limit loses only itself (each run's pytest log goes to a
# temporary folder, its failures printed: the device tool brings back 8
# files, which the five models' logs and JSONs and the build log exceed); NVFUSE_BENCH_SECONDS (default 585)
# is the time the whole command may take, and a model that would start
# with less than 30 s left is skipped. Prints benchmarks/models_report.py's
# table over every JSON (after each case's top kernels when
# NVFUSE_BENCH_KERNELS=1).
set -uo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
budget="${NVFUSE_BENCH_SECONDS:-585}"
zoo="${NVFUSE_BENCH_ZOO:-gpt2,bert}"
source tools/gpu_build_step.sh
[ "${NVFUSE_SKIP_BUILD:-0}" = 1 ] || build_nvfuse
jsons=()
logs=$(mktemp -d)
for model in ${zoo//,/ }; do
  left=$((budget - ($(date +%s) - start)))
  if [ "$left" -lt 30 ]; then
    record "$model" "skipped: no time left"
    continue
  fi
  json="$LOG_DIR/models_$model.json"
  jsons+=("$json")
  NVFUSE_BENCH_ZOO="$model" timeout "$left" python3 -m pytest benchmarks/test_models.py -q \
    -p no:cacheprovider --benchmark-json="$json" >"$logs/models_$model.log" 2>&1
  record "$model" "$(tail -1 "$logs/models_$model.log" | cut -c1-70)"
  grep -E "^(FAILED|ERROR)" "$logs/models_$model.log" | head -5
done
if [ ${#jsons[@]} -gt 0 ]; then
  # The kernels first, the table last: a device call's output keeps its tail.
  [ -z "${NVFUSE_BENCH_KERNELS:-}" ] || python3 benchmarks/models_report.py "${jsons[@]}" --kernels
  python3 benchmarks/models_report.py "${jsons[@]}"
fi
print_summary
