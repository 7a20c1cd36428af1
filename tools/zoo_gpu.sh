#!/usr/bin/env bash
# The real-model zoo on a GPU machine, as one device command: builds
# nvfuse, prints tools/zoo_report.py's errors and reports at the small
# sizes in fp32 and bf16 autocast (logs in $OUT, else build/gpu), then runs
# the marked GPU zoo and torch.compile tests, and prints a summary last.
# NVFUSE_ZOO_REPORT=0 skips the reports, NVFUSE_ZOO_TESTS=0 the tests.
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/gpu_build_step.sh
build_nvfuse

if [ "${NVFUSE_ZOO_REPORT:-1}" != 0 ]; then
  for dtype in fp32 bf16; do
    python3 tools/zoo_report.py --device cuda --size small --dtype "$dtype" \
      >"$LOG_DIR/zoo_$dtype.log" 2>&1
    grep -E "inference|training" "$LOG_DIR/zoo_$dtype.log"
    record "zoo $dtype" "$(grep -c FAILED "$LOG_DIR/zoo_$dtype.log") failed"
  done
fi
if [ "${NVFUSE_ZOO_TESTS:-1}" != 0 ]; then
  python3 -m pytest tests_py/models tests_py/dynamo tests_py/test_torch_compile.py -m gpu \
    -q -p no:cacheprovider 2>&1 | tee "$LOG_DIR/zoo_tests.log" | tail -15
  record "zoo tests" "$(tail -1 "$LOG_DIR/zoo_tests.log")"
fi
print_summary
