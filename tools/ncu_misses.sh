#!/usr/bin/env bash
# Where the time goes in the reduction cases that miss issue 4's bar: runs
# each through Nsight Compute (one execute's kernels, after warm-up) and
# prints per kernel its time, DRAM and SM throughput, achieved occupancy,
# launch shape and the top warp stall reasons (tools/ncu_summary.py).
# Run from the repository root on the GPU machine after building nvfuse:
#
#     bash tools/ncu_misses.sh [case:dtype:ROWSxWIDTH ...]
#
# Reports go to build/gpu/ncu, the summary also to $OUT/ncu_summary.txt.
# Clock control is left to the driver (--clock-control none), as the
# benchmarks run.
set -uo pipefail
cd "$(dirname "$0")/.."
DIR=build/gpu/ncu
rm -rf "$DIR"; mkdir -p "$DIR"
NCU="${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}"
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(layer_norm_bwd:bf16:4096x65536 rms_norm_bwd:fp32:4096x65536
           bias_residual_layer_norm_fwd:bf16:4096x65536 var_mean_inner:bf16:4096x65536
           layer_norm_fwd:bf16:512x262144 layer_norm_bwd:bf16:512x262144
           log_softmax_fwd:fp32:512x262144 softmax_fwd:bf16:32768x8192
           sum_outer:bf16:32768x8192 rms_norm_bwd:bf16:2048x1600 sum_inner:fp32:2048x1600)
fi
for target in "${targets[@]}"; do
  IFS=: read -r case dtype shape <<<"$target"
  name="${case}-${dtype}-${shape}"  # no ':' (the device tool's file names)
  # profile_case.py runs 4 executes; the last one's kernels are the ones
  # after 3 calls' worth of launches, so keep them all and let the summary
  # take the last of each kernel name.
  timeout 240 "$NCU" --clock-control none --kernel-name regex:nvfuse --launch-count 8 \
      --section SpeedOfLight --section Occupancy --section LaunchStats \
      --section WarpStateStats --section MemoryWorkloadAnalysis \
      --section InstructionStats --section ComputeWorkloadAnalysis \
      --csv --page raw \
      python3 tools/profile_case.py "$case" "$dtype" "$shape" >"$DIR/$name.csv" 2>"$DIR/$name.err"
  echo "rc=$? $target" >>"$DIR/status.txt"
done
python3 tools/ncu_summary.py "$DIR"/*.csv | tee "$DIR/summary.txt"
if [ -n "${OUT:-}" ]; then cp "$DIR/summary.txt" "$OUT/ncu_summary.txt"; fi
