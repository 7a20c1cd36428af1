#include "schedule/cluster_shapes.h"

#include <algorithm>

namespace nvfuse {

namespace {

// Cluster rows: the most bytes of row inputs a thread holds (32 registers:
// more spills at 1024 threads, e.g. fp32 RMS-norm backward at 262144), and
// the most threads per block. At 4096x65536 on an H100 (% of copy
// bandwidth), clusters of 8 blocks of 256 threads holding 32 elements each
// against clusters of 4 blocks of 1024 threads holding 16: softmax bf16 64
// vs 52, fp32 84 vs 82, layer norm fp32 86 vs 69, softmax backward bf16 94
// vs 72, RMS norm bf16 87 vs 81: a block that waits at a cluster barrier
// leaves its SM to the other resident blocks, and 1024-thread blocks with
// over 32 registers leave none.
constexpr int64_t kMaxClusterHeldBytes = 128;
constexpr int64_t kMaxClusterThreads = 512;
// sm_90 (the cluster rows' architecture): registers of an SM, and the
// fewest registers a cluster row's thread is given (the inner-outer rows
// of 16-32 elements take 58-83 when left unbounded).
constexpr int64_t kRegistersPerSm = 64 * 1024;
constexpr int64_t kLeastClusterRowRegisters = 64;

}  // namespace

// The fewest blocks (2, 4, 8 or 16, at most tuning.max_cluster) that hold
// a row of `groups` vector groups in registers, `max_groups` per thread (8
// or 16 blocks with twice that where those fit in kMaxClusterHeldBytes;
// staged rows, whose groups wait in shared memory, at any size: layer
// norm bf16 4096x65536 on an H100, 8 blocks of 256 threads 56-86% of copy
// bandwidth from run to run, 4 blocks of 512 90-91%; staged inner-outer
// rows never: see reductions/cluster_rows.cpp).
// 16 is a non-portable cluster size, which Hopper (the only architecture
// the cluster rows are generated for) schedules.
std::optional<ClusterShape> cluster_for_row(int64_t groups, int64_t max_groups,
    int64_t held_bytes_per_group, int max_blocks, DoubleGroups doubling,
    const ReductionTuning& tuning) {
  const int64_t max_lanes = std::min<int64_t>(kMaxClusterThreads, tuning.max_persistent_threads);
  for (int blocks = 2; blocks <= max_blocks; blocks *= 2) {
    const int64_t block_groups = ceil_div(groups, blocks);
    const bool doubled = doubling == DoubleGroups::kAlways ||
        (doubling == DoubleGroups::kFromEightBlocks && blocks >= 8);
    for (int64_t per_thread : {max_groups * (doubled ? 2 : 1), max_groups}) {
      const int64_t lanes = next_pow2(ceil_div(block_groups, per_thread));
      const int64_t held = ceil_div(block_groups, lanes) * held_bytes_per_group;
      if (lanes <= max_lanes && held <= kMaxClusterHeldBytes) {
        return ClusterShape{blocks, lanes};
      }
    }
  }
  return std::nullopt;
}

// The blocks of a cluster that streams a chunked row (ReductionParams::
// cluster), or 1 where one block per row chunks it. A row that phases read
// again, on sm_90, whose rows in flight (one cluster walking rows per
// `blocks` SMs, ReductionExecutor::streamed_walkers) take at most half the
// L2: a phase's re-read of the row then comes from L2, where blocks of a
// row each (every row in flight at once) re-read it from DRAM. H100, % of
// copy bandwidth at 512x262144 fp32 (tools/tune_reduction.py, session
// 19), chunked -> streamed by 16 blocks: layer-norm backward 41 -> 61,
// RMS-norm backward 42 -> 67-68, softmax backward 59 -> 78-79. 8-block
// clusters (twice the rows in flight, 32 MB) missed L2: softmax backward
// 49, and 54 with 12 walking clusters. Not for rows with a variance:
// bias + residual + layer norm fell 58 -> 43-49 (its Welford states merge
// per chunk, in block and cluster). The blocks halve while they outnumber
// the row's chunks (a block past the row's end streams nothing).
int streamed_cluster_blocks(const ReductionAnalysis& analysis, int64_t groups, int64_t chunk_groups,
    int64_t held_bytes_per_group, const DeviceInfo& device, const ReductionTuning& tuning) {
  if (analysis.last_element_phase == 0 || analysis.has_variance() || device.arch < 90 ||
      held_bytes_per_group == 0 || tuning.streamed_cluster < 2) {
    return 1;
  }
  int blocks = tuning.streamed_cluster;
  const int64_t chunks = ceil_div(groups, chunk_groups);
  while (blocks > 2 && blocks > chunks) {
    blocks /= 2;
  }
  const int64_t rows_in_flight = ceil_div(device.sm_count, blocks);
  const int64_t row_bytes = groups * held_bytes_per_group;
  return 2 * rows_in_flight * row_bytes <= device.l2_bytes ? blocks : 1;
}

// The blocks of an inner-outer cluster row an SM holds: as many as its
// shared memory admits (kSharedBytesPerSm, 1 KB of it reserved per block,
// and the kernel's static slots), but not so many that a thread gets
// fewer than kLeastClusterRowRegisters registers.
int cluster_blocks_per_sm(int block_size, int64_t shared_bytes) {
  const int64_t by_shared = kSharedBytesPerSm / (shared_bytes + 2 * 1024);
  const int64_t by_registers = kRegistersPerSm / (int64_t{block_size} * kLeastClusterRowRegisters);
  return static_cast<int>(std::max<int64_t>(1, std::min(by_shared, by_registers)));
}

namespace {

// An outer reduction split over the kOuterCluster blocks of a thread block
// cluster (sm_90) combines their results through distributed shared memory,
// not through partials in global memory that the last block to arrive
// reads back: that hand-over costs about 3 us after the walk (see
// docs/reductions.md). Chosen where it measured faster on an H100: the
// cluster grid holds half a block to two blocks per SM and the walk is at
// most kOuterClusterMaxRows long. No variance: its Welford states were not
// measured. Clusters of 12 or 16 blocks lost.
//
// Its blocks are kOuterClusterBlock threads, kOuterClusterBlockX across the
// columns (blocks of 512, 32 across, made half the clusters, and 128
// blocks left 4 of 132 SMs idle). H100, % of copy bandwidth, bf16 sum over
// 8192 / 4096 rows of 4096 in one run,
// threads across x down: 32x16 77 / 61; 16x16 80-81 / 65; 8x16 80-81 /
// 65-66; 8x32 78 / 63; 32x8 67 / 56; 16x8 69 / 58; 32x32 52 / 36; 4x32 65 /
// 52. Deeper walk batches (kOuterBatch 8 or 16) helped none: 76-79 there.
// Against blocks of 512 (32 across) and the global split (sum, same run): bf16
// 8192x4224 81 / 73 / 71, 2048x1600 25 / 22 (split) / 22, 2048x1088 18 /
// 16 / 16, fp32 2048x1024 34 / 29 / 30, 4096x1600 63 / 63 / 55, 8192x2048
// 79-83 / 82-83 / 77.
constexpr int kOuterCluster = 8;
constexpr int64_t kOuterClusterMaxRows = 8192;
constexpr int kOuterClusterBlock = 256;
constexpr int kOuterClusterBlockX = 16;

// Partial clusters: each pair of walking blocks sums its column partials
// through distributed shared memory, and writes one partial row where it
// wrote two; the finishing kernel reads half. H100, % of copy bandwidth,
// partial_cluster 1 -> 2 (4 measured within a point of 2 but for
// layer-norm backward bf16 2048x1600, 32): layer-norm backward bf16
// 8192x4096 74 -> 83-86, 2048x1600 31 -> 36, 32768x8192 90-91 -> 93, fp32
// 8192x4096 92 -> 94-95; RMS-norm backward bf16 8192x4096 84 -> 91,
// 32768x8192 94 -> 95. Not RMS-norm backward fp32 (one column reduction of
// fp32 rows, whose partials are the least of its bytes): 2048x1600 69-70
// -> 64-65, 8192x4096 97 -> 96. RMS-norm backward bf16 2048x1600 (15.5
// rows an SM) 33 -> 30.6: a single column reduction pairs its blocks from
// kLeastSinglePartialClusterRows rows an SM, two or more from
// kLeastPartialClusterRows.
constexpr int kPartialCluster = 2;
constexpr int64_t kLeastPartialClusterRows = 8;
constexpr int64_t kLeastSinglePartialClusterRows = 32;

}  // namespace

OuterClusterShape outer_split_cluster_shape(const ReductionAnalysis& analysis,
    int64_t vector_groups, int64_t walk_rows, const DeviceInfo& device) {
  const int block_x =
      static_cast<int>(std::min<int64_t>(kOuterClusterBlockX, next_pow2(vector_groups)));
  const int64_t grid_x = ceil_div(vector_groups, block_x) * kOuterCluster;
  const bool fits = device.arch >= 90 && !analysis.has_variance() &&
      walk_rows <= kOuterClusterMaxRows && 2 * grid_x >= device.sm_count &&
      grid_x <= 2 * device.sm_count;
  if (!fits) {
    return {};
  }
  return {kOuterCluster, block_x, kOuterClusterBlock, grid_x};
}

int partial_cluster_blocks(const ReductionAnalysis& analysis, const ReductionParams& p,
    int64_t rows, int64_t shared_bytes, bool holds_only_half_types, const DeviceInfo& device) {
  const bool single_column = analysis.outer_reductions.size() == 1;
  const bool welford_columns = std::any_of(analysis.outer_reductions.begin(),
      analysis.outer_reductions.end(), [](const Expr* r) { return r->is<VarMeanOp>(); });
  const int64_t least_rows =
      single_column ? kLeastSinglePartialClusterRows : kLeastPartialClusterRows;
  const bool pairs = device.arch >= 90 && (!single_column || holds_only_half_types) &&
      (!p.staged || p.block_size == p.threads_per_row) &&
      shared_bytes <= kMaxInnerOuterSharedBytes && rows >= least_rows * device.sm_count &&
      !welford_columns;
  return pairs ? kPartialCluster : 1;
}

}  // namespace nvfuse
