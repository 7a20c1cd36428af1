// Inner-outer rows (ReductionAnalysis::outer_reductions: the backward
// norms' column sums next to their row reductions): blocks walk rows
// grid-stride, each thread accumulating its columns' partial results (in
// shared memory, or in registers when staged); a finishing kernel combines
// the blocks' partial rows. Clusters combine their blocks' partials through
// distributed shared memory first (ReductionParams::partial_cluster).
#include <algorithm>

#include "schedule/cluster_shapes.h"
#include "schedule/reductions/reduction_tactics.h"

namespace nvfuse {

bool place_column_partials(InnerRows& rows) {
  if (!rows.analysis.has_outer_reductions()) {
    return true;
  }
  ReductionSchedule& schedule = rows.schedule();
  ReductionParams& p = rows.params();
  // The row must stay in registers or staged rows' shared memory (each
  // thread owns the same columns in every row), and an unstaged block's
  // column partials fit in shared memory.
  p.inner_outer = true;
  // A cluster's block keeps the partials of its part of the row: one chunk
  // held, or the chunks it streams.
  const int64_t width = schedule.space.width;
  const int64_t chunk_columns = p.groups_per_thread * rows.lanes * p.vector_width;
  const int64_t block_columns = p.cluster == 1 ? width
      : p.persistent                           ? chunk_columns
                     : ceil_div(ceil_div(width, chunk_columns), p.cluster) * chunk_columns;
  // Staged rows keep them in registers (their buffers are placed already).
  const int64_t partial_bytes = p.staged
      ? 0
      : column_partial_offsets(rows.analysis, schedule.rows_per_block, block_columns).back();
  if (!p.staged) {
    schedule.shared_bytes = partial_bytes;
  }
  return (p.persistent || p.cluster > 1) && partial_bytes <= kMaxInnerOuterSharedBytes &&
      schedule.space.rows != 0;
}

bool cluster_column_partials(InnerRows& rows) {
  ReductionSchedule& schedule = rows.schedule();
  ReductionParams& p = rows.params();
  if (!p.inner_outer) {
    return true;
  }
  if (p.cluster > 1) {
    p.min_blocks_per_sm = cluster_blocks_per_sm(p.block_size, schedule.shared_bytes);
    return true;
  }
  // Staged rows put their register partials into the staged buffers, done
  // with after the walk: those must hold them.
  const int64_t partial_shared_bytes = !p.staged
      ? schedule.shared_bytes
      : std::max(schedule.shared_bytes,
            column_partial_offsets(
                rows.analysis, 1, int64_t{p.groups_per_thread} * p.block_size * p.vector_width)
                .back());
  p.partial_cluster = partial_cluster_blocks(rows.analysis, p, schedule.space.rows,
      partial_shared_bytes, rows.facts.holds_only_half_types, rows.device);
  if (p.partial_cluster > 1) {
    schedule.shared_bytes = partial_shared_bytes;
  }
  return true;
}

}  // namespace nvfuse
