#!/usr/bin/env bash
# The multi-GPU check: run from the repository root on a host with 2 or
# more GPUs (the device tool's nvidia-h200-x2 / -x4). Builds nvfuse, runs
# the multi-process tests (tests_py/multidevice) with NCCL on 2 GPUs and on
# 4 when there are 4, then the overlap benchmark (benchmarks/multidevice/
# overlap.py: pipelined all-gather + GEMM and GEMM + reduce-scatter against
# NCCL then cuBLAS and torch's fused symm_mem ops, with kernel timelines)
# and the tensor-parallel benchmark on 2 GPUs and on 4, and prints a short
# summary last. Logs go to $OUT when set, else build/gpu.
set -uo pipefail
cd "$(dirname "$0")/.."
export NVFUSE_COMM_TIMEOUT_S="${NVFUSE_COMM_TIMEOUT_S:-120}"
# NVLink multicast stays off on the lent machines.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
source tools/gpu_build_step.sh

gpus=$(nvidia-smi -L | wc -l)
build_nvfuse
for n in 2 4; do
  if [ "$n" -gt "$gpus" ]; then continue; fi
  NVFUSE_TEST_DEVICE=cuda timeout 300 torchrun --nproc-per-node="$n" \
    -m pytest tests_py/multidevice -q -p no:cacheprovider >"$LOG_DIR/nccl_$n.log" 2>&1
  rc=$?
  grep -E "passed|failed" "$LOG_DIR/nccl_$n.log" | head -"$n"
  record "NCCL tests x$n" "rc=$rc, $(grep -E 'passed|failed' "$LOG_DIR/nccl_$n.log" | head -1)"
done
for n in 2 4; do
  if [ "$n" -gt "$gpus" ]; then continue; fi
  timeout 400 torchrun --nproc-per-node="$n" benchmarks/multidevice/overlap.py --timeline \
    >"$LOG_DIR/overlap_$n.log" 2>&1
  record "overlap x$n" "rc=$?"
  grep -v "^W" "$LOG_DIR/overlap_$n.log" | tail -60
done
for n in 2 4; do
  if [ "$n" -gt "$gpus" ]; then continue; fi
  timeout 300 torchrun --nproc-per-node="$n" benchmarks/multidevice/tp_blocks.py \
    >"$LOG_DIR/tp_blocks_$n.log" 2>&1
  record "TP benchmark x$n" "rc=$?"
  grep -v "^W" "$LOG_DIR/tp_blocks_$n.log" | tail -12
done

echo "==== multi-GPU check: $gpus x $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) ===="
print_summary
