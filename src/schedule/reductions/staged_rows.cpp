// Staged rows (ReductionParams::staged): a wave of blocks walks the rows
// and copies the next row into shared memory (cp.async, two buffers) while
// the current one computes; and the per-column inputs those rows hold in
// registers instead (ReductionParams::hold_columns).
#include <algorithm>

#include "schedule/cluster_shapes.h"
#include "schedule/reductions/reduction_tactics.h"

namespace nvfuse {

namespace {

constexpr int64_t kMaxColumnPartialBytes = 256;  // see ReductionParams::staged
constexpr int64_t kMaxHeldColumnBytes = 256;     // see ReductionParams::hold_columns
constexpr int kMaxColumnHolderBlock = 512;       // see ReductionParams::hold_columns

// A staged inner-outer thread keeps its columns' partial results in
// registers, kMaxColumnPartialBytes at most.
int64_t column_partial_bytes(const InnerRows& rows) {
  const ReductionParams& p = rows.walk.schedule.params;
  int64_t bytes = 0;
  for (const Expr* r : rows.analysis.outer_reductions) {
    bytes += int64_t{p.groups_per_thread} * p.vector_width *
        std::max<int64_t>(4, size_in_bytes(r->output(0)->dtype()));
  }
  return bytes;
}

// Per-column inputs held in registers, up to kMaxHeldColumnBytes a thread,
// in blocks of at most 512 threads (1024 get 64 registers: layer-norm
// backward bf16 at 16384 spilled): where the buffers leave one block an SM
// anyway, where staging is forced, and in inner-outer rows walked by one
// block (γ is then read once a block, not once a row: H100, layer-norm
// backward bf16 8192x4096 85 -> 91% of copy bandwidth, 16384x1600 78 -> 87,
// 2048x1600 36 -> 39, no spills).
bool holds_columns(const InnerRows& rows) {
  const ReductionWalk& walk = rows.walk;
  const ReductionParams& p = walk.schedule.params;
  int64_t column_bytes = 0;
  bool columns_contiguous = true;
  for (size_t t = 0; t < walk.input_count; ++t) {
    if (walk.per_element[t] && rows.analysis.is_per_column(rows.analysis.inputs[t])) {
      column_bytes += p.groups_per_thread * p.vector_width * size_in_bytes(walk.tensors[t].dtype);
      columns_contiguous = columns_contiguous && p.access[t] == InnerAccess::kContiguous;
    }
  }
  const bool inner_outer = rows.analysis.has_outer_reductions();
  return column_bytes > 0 && columns_contiguous && column_bytes <= kMaxHeldColumnBytes &&
      p.block_size <= kMaxColumnHolderBlock &&
      (2 * walk.schedule.shared_bytes > kSharedBytesPerSm ||
          (rows.tuning.staging == 2 && !inner_outer) || (inner_outer && p.cluster == 1));
}

}  // namespace

bool stage_rows(InnerRows& rows) {
  ReductionSchedule& schedule = rows.schedule();
  ReductionParams& p = rows.params();
  p.staged = rows.facts.stageable && p.persistent && schedule.grid_y == 1 &&
      (rows.tuning.staging == 2 || rows.staged_cluster ||
          (p.cluster == 1 && rows.facts.stages_inner_outer)) &&
      column_partial_bytes(rows) <= kMaxColumnPartialBytes;
  if (p.staged) {
    schedule.shared_bytes =
        2 * p.block_size * p.groups_per_thread * rows.facts.held_bytes_per_group;
    p.hold_columns = holds_columns(rows);
  }
  return true;
}

}  // namespace nvfuse
