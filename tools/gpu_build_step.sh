# Sourced, from the repository root, by the GPU machines' scripts
# (gpu_check.sh, multigpu_check.sh, zoo_gpu.sh, models_bench.sh): what they
# all set (logs in $LOG_DIR: $OUT under the device tool, else build/gpu;
# unbuffered Python; builds on every core), the summary table (`record NAME
# RESULT`, printed by `print_summary`) and the build step, which installs
# nvfuse from this tree (build dir build/gpu, log in $LOG_DIR/build.log)
# and records how it went.
LOG_DIR="${OUT:-build/gpu}"
mkdir -p "$LOG_DIR"
export PYTHONUNBUFFERED=1
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
declare -a NAMES RESULTS
record() { NAMES+=("$1"); RESULTS+=("$2"); }
print_summary() {
  for i in "${!NAMES[@]}"; do printf '%-16s %s\n' "${NAMES[$i]}" "${RESULTS[$i]}"; done
}

build_nvfuse() {
  local start
  start=$(date +%s)
  if python3 -m pip install --no-build-isolation --no-deps . -Cbuild-dir=build/gpu \
      >"$LOG_DIR/build.log" 2>&1; then
    record build "ok ($(( $(date +%s) - start )) s)"
  else
    tail -30 "$LOG_DIR/build.log"
    record build FAILED
  fi
}
