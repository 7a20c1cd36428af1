// Pipelined rows (ReductionParams::pipelined): persistent rows of one
// block, not split, walked grid-stride by one wave of blocks, each loading
// its next row while the current one reduces.
#include "schedule/cluster_shapes.h"
#include "schedule/reductions/reduction_tactics.h"

namespace nvfuse {

namespace {

// The most bytes of row inputs a thread holds per row (the next row's copy
// doubles them), and the least row groups per SM. Measured on an H100 at
// 32768x8192 (tools/tune_reduction.py, % of copy bandwidth): pipelining
// lifts the bf16 rows that hold two inputs and reduce a variance (bias +
// residual + layer norm 58 -> 97: the variance's two dependent row sums
// double the latency a row's loads must cover, and a bf16 row carries half
// the bytes), while it costs the rows of one held input (layer norm bf16
// 101 -> 95, var_mean bf16 103 -> 100), the fp32 ones (layer norm 100 ->
// 95) and the other bf16 ones (softmax 81 -> 68, RMS norm 99 -> 95, sum 98
// -> 95) the occupancy that the second copy's registers take.
constexpr int64_t kMaxPipelinedBytes = 64;
constexpr int64_t kLeastPipelinedRowGroups = 8;

}  // namespace

bool pipeline_rows(InnerRows& rows) {
  const ReductionSchedule& schedule = rows.walk.schedule;
  ReductionParams& p = rows.params();
  const InnerRowFacts& facts = rows.facts;
  const int sm_count = rows.device.sm_count;
  const int64_t held_bytes = p.groups_per_thread * facts.held_bytes_per_group;
  // tuning.pipelining: 0 never; 1 where the measurements above say it
  // pays; 2 wherever it can.
  const bool pays = schedule.grid_x >= kLeastPipelinedRowGroups * sm_count &&
      facts.holds_only_half_types && facts.held_tensors >= 2 && rows.analysis.has_variance();
  p.pipelined = rows.tuning.pipelining > 0 && p.persistent && !p.inner_outer && !p.staged &&
      schedule.grid_y == 1 && p.cluster == 1 && held_bytes > 0 &&
      held_bytes <= kMaxPipelinedBytes && schedule.grid_x > sm_count &&
      (rows.tuning.pipelining == 2 || pays);
  return true;
}

}  // namespace nvfuse
