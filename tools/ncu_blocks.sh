#!/usr/bin/env bash
# Nsight Compute on benchmark blocks (tools/profile_against_compile.py), nvfuse against
# torch.compile: per kernel its time, DRAM and SM throughput, occupancy,
# registers, launch shape and top stalls (tools/ncu_summary.py). Run from
# the repository root on the GPU machine after building nvfuse:
#
#     bash tools/ncu_blocks.sh case:dtype:size ...
#
# Reports go to build/gpu/ncu_blocks, the summary also to
# $OUT/ncu_blocks_summary.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
DIR=build/gpu/ncu_blocks
rm -rf "$DIR"; mkdir -p "$DIR"
NCU="${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}"
for target in "$@"; do
  IFS=: read -r case dtype size <<<"$target"
  for executor in nvfuse compile; do
    name="${case}-${dtype}-${size}-${executor}"
    # Two of the four runs warm up; their kernels are the last launches.
    timeout 240 "$NCU" --clock-control none --kernel-name regex:'nvfuse|triton' \
        --launch-skip 2 --launch-count 6 \
        --section SpeedOfLight --section Occupancy --section LaunchStats \
        --section WarpStateStats --section MemoryWorkloadAnalysis --section InstructionStats \
        --csv --page raw \
        python3 tools/profile_against_compile.py "$case" "$dtype" "$size" "$executor" \
        >"$DIR/$name.csv" 2>"$DIR/$name.err"
    echo "rc=$? $name" >>"$DIR/status.txt"
  done
done
python3 tools/ncu_summary.py "$DIR"/*.csv | tee "$DIR/summary.txt"
if [ -n "${OUT:-}" ]; then cp "$DIR/summary.txt" "$OUT/ncu_blocks_summary.txt"; fi
