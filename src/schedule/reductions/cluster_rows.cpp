// Inner rows too long for one block's registers that phases would re-read:
// held by a thread block cluster (sm_90), each block a contiguous part,
// combining their reductions through distributed shared memory; with
// outer reductions too (layer-norm backward at 65536), the cluster's
// blocks walk rows together, each accumulating the column partials of its
// own part. The cluster's size comes from schedule/cluster_shapes.cpp.
#include <optional>

#include "schedule/cluster_shapes.h"
#include "schedule/reductions/reduction_tactics.h"

namespace nvfuse {

namespace {

// 16 blocks (rows of 262144) only without a variance, as measured on the
// H100 at 512 x 262144 (% of copy bandwidth, chunked -> 16 blocks):
// log-softmax fp32 49 -> 64, bf16 49 -> 62; softmax fp32 48 -> 62, bf16 48
// -> 53; softmax backward bf16 59 -> 78; RMS norm bf16 63 -> 72; but layer
// norm fp32 63 -> 54, bf16 57 -> 55: there the chunked kernel, which
// re-reads the row, beats a 16-SM cluster at one block per SM. Layer-norm
// backward's row kernel (then two cluster barriers per row, one per sum)
// measured 39 -> 33; its sums now pass the cluster together
// (reduce_together), and its column sums join the row kernel (inner-outer),
// which no longer re-reads.
// Rows of half types without a variance that write per element take
// clusters of twice the groups a thread (32 elements, half the blocks)
// where the cluster holds the row at the usual groups too. H100, % of copy
// bandwidth, 16 -> 32 elements (tools/tune_reduction.py): softmax bf16
// 4096x65536 89-90 -> 93 (staged, 4 -> 2 blocks), 512x262144 88 -> 91 (16
// -> 8); log-softmax 90 -> 93-94 and 89 -> 92; RMS norm 512x262144 90 ->
// 92-93 (8 blocks, 63 registers), at 65536 95 either way; softmax backward
// 101 -> 102, 99 -> 99. Layer norm (a variance) at 262144 spilled and fell
// 83 -> 60.
std::optional<ClusterShape> cluster_shape(
    const InnerRows& rows, int max_blocks, DoubleGroups doubling) {
  const InnerRowFacts& facts = rows.facts;
  const bool wider_clusters = facts.half_vectors && facts.writes_elements &&
      !rows.analysis.has_variance() && !rows.analysis.has_outer_reductions() && !facts.draws_random;
  std::optional<ClusterShape> shape = cluster_for_row(
      facts.groups, rows.max_groups, facts.held_bytes_per_group, max_blocks, doubling, rows.tuning);
  if (shape.has_value() && wider_clusters) {
    if (auto wider = cluster_for_row(facts.groups, 2 * rows.max_groups, facts.held_bytes_per_group,
            max_blocks, doubling, rows.tuning)) {
      shape = wider;
    }
  }
  return shape;
}

// Staged cluster rows take 16 blocks with a variance too: their next row's
// copies keep the SM loading while a block waits at the cluster barrier.
// Staged inner-outer rows take one `max_groups` a thread where 16 blocks
// hold that, whose column partials are registers per held column
// (layer-norm backward bf16 4096x65536: 4 blocks of 512 threads at twice
// the groups, one block an SM, 68-70% of copy bandwidth; 8 blocks of 512,
// two an SM, 74-77); at 262144, 16 blocks of twice the groups (53 -> 67
// staged).
std::optional<ClusterShape> staged_cluster_shape(const InnerRows& rows) {
  if (rows.analysis.has_outer_reductions()) {
    if (auto shape =
            cluster_for_row(rows.facts.groups, rows.max_groups, rows.facts.held_bytes_per_group,
                rows.tuning.max_cluster, DoubleGroups::kNever, rows.tuning)) {
      return shape;
    }
  }
  return cluster_shape(rows, rows.tuning.max_cluster, DoubleGroups::kAlways);
}

// Staging pays where a row waits at two cluster reductions or more (a
// variance: its sum, then its squared deviations) and the cluster without
// it holds its row poorly. H100, % of copy bandwidth, cluster (or chunked)
// -> staged: at 4096x65536 layer norm bf16 82 -> 86, softmax bf16 88 -> 92,
// bias + residual + layer norm bf16 66 -> 71, fp32 61 -> 74 (two held
// inputs: half the elements a block); at 512x262144 (16 blocks, or chunked)
// layer norm bf16 60 -> 84, fp32 62 -> 75, softmax bf16 81 -> 89, fp32 90
// -> 95, log-softmax bf16 82 -> 89, fp32 90 -> 95. It costs the rows of one
// reduction (RMS norm bf16 at 262144 90 -> 86, softmax backward bf16 99 ->
// 86, at 65536 101 -> 88) and fp32 rows of 8 blocks (layer norm 92 -> 87,
// softmax 96 -> 91): its buffers take the shared memory that the
// per-column values' L1 and the occupancy had.
bool staging_pays(const InnerRows& rows, const ClusterShape& staged, bool holds_unstaged) {
  const ReductionAnalysis& analysis = rows.analysis;
  if (analysis.has_outer_reductions()) {
    return rows.facts.stages_inner_outer;
  }
  const int reduction_rounds = analysis.last_element_phase + (analysis.has_variance() ? 1 : 0);
  return reduction_rounds >= 2 &&
      (rows.facts.holds_only_half_types || rows.facts.held_tensors >= 2 || !holds_unstaged ||
          staged.blocks == 16);
}

}  // namespace

bool hold_rows_in_clusters(InnerRows& rows) {
  ReductionParams& p = rows.params();
  if (p.persistent || rows.analysis.last_element_phase == 0 || rows.device.arch < 90) {
    return true;
  }
  const std::optional<ClusterShape> staged = staged_cluster_shape(rows);
  const std::optional<ClusterShape> unstaged = cluster_shape(rows,
      rows.analysis.has_variance() ? std::min(8, rows.tuning.max_cluster) : rows.tuning.max_cluster,
      DoubleGroups::kFromEightBlocks);
  rows.staged_cluster = rows.facts.stageable && staged.has_value() &&
      (rows.tuning.staging == 2 || staging_pays(rows, *staged, unstaged.has_value()));
  if (auto cluster = rows.staged_cluster ? staged : unstaged) {
    p.cluster = cluster->blocks;
    p.persistent = true;
    rows.lanes = cluster->lanes;
  }
  return true;
}

}  // namespace nvfuse
