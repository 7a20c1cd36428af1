#!/usr/bin/env bash
# Native host profiles of zoo steps on a GPU machine, as one device command:
# where a host-bound step's time goes below Python, in torch's and nvfuse's
# C++ and the driver, waits on locks included (py-spy --native --idle; the
# profiler's own time names the op but not what inside it took the time).
#
#   tools/host_spy.sh vit:training:nvfuse resnet:training:inductor
#
# Builds nvfuse (unless NVFUSE_SKIP_BUILD=1), installs py-spy from .whl/
# (tools/fetch_client_wheels.sh fetches it; carry .whl), then per
# MODEL:STEP:BACKEND runs synchronized steps and records
# NVFUSE_SPY_SECONDS (default 6) at NVFUSE_SPY_RATE samples a second
# (default 200: at 1,000 with --idle py-spy fell behind and wrote
# nothing). The process pauses for each sample: py-spy takes native stacks
# only so (--nonblocking refuses --native). Prints tools/host_spy.py's report for the frames named in
# NVFUSE_SPY_MARKERS (comma-separated; default the compiled forward's and
# backward's calls) and keeps the raw profiles in $LOG_DIR.
set -uo pipefail
cd "$(dirname "$0")/.."
source tools/gpu_build_step.sh
[ "${NVFUSE_SKIP_BUILD:-0}" = 1 ] || build_nvfuse
python3 -m pip install -q --no-deps .whl/py_spy-*.whl >/dev/null 2>&1 || record py-spy "not installed"
export PYTHONPATH=.
IFS=, read -r -a markers <<< "${NVFUSE_SPY_MARKERS:-CompiledFunction,evaluate_function}"
for spec in "$@"; do
  IFS=: read -r model step backend <<< "$spec"
  tag="${model}_${step}_${backend}"
  log="$LOG_DIR/spy_$tag.log"
  python3 tools/host_spy.py steps "$model" "$step" "$backend" >"$log" 2>&1 &
  pid=$!
  for _ in $(seq 1 240); do
    grep -q WARM "$log" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 1
  done
  if grep -q WARM "$log"; then
    timeout $(( ${NVFUSE_SPY_SECONDS:-6} + 60 )) py-spy record --native --idle \
      -r "${NVFUSE_SPY_RATE:-200}" -d "${NVFUSE_SPY_SECONDS:-6}" --format raw \
      -p "$pid" -o "$LOG_DIR/spy_$tag.txt" >>"$log" 2>&1
  fi
  kill "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  if [ -s "$LOG_DIR/spy_$tag.txt" ]; then
    record "$tag" "profiled"
    echo "== $tag"
    python3 tools/host_spy.py report "$LOG_DIR/spy_$tag.txt" "${markers[@]}"
  else
    record "$tag" "no profile (see spy_$tag.log)"
    tail -5 "$log"
  fi
done
print_summary
