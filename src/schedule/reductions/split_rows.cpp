// Inner rows: blocks over the rows, a row split over several blocks when
// the rows alone cannot fill the GPU (the last block of a row combines the
// partial results in a fixed order), and the launch shape that follows.
#include <algorithm>

#include "schedule/cluster_shapes.h"
#include "schedule/reductions/reduction_tactics.h"

namespace nvfuse {

bool split_few_rows(InnerRows& rows) {
  ReductionSchedule& schedule = rows.schedule();
  ReductionParams& p = rows.params();
  const int64_t rows_per_block = rows.lanes >= 32 ? 1 : kShortRowBlock / rows.lanes;
  schedule.rows_per_block = rows_per_block;
  schedule.grid_x = ceil_div(schedule.space.rows, rows_per_block) * p.cluster;
  // Few rows and nothing per element after the reductions: split each row
  // over several blocks.
  const int64_t chunk_groups = rows.lanes * rows.max_groups;
  if (rows.analysis.last_element_phase == 0 && schedule.grid_x < rows.device.sm_count &&
      rows.facts.groups >= 2 * chunk_groups && rows.lanes >= 32 &&
      !rows.analysis.has_outer_reductions()) {
    p.persistent = false;
    rows.lanes = std::min<int64_t>(rows.tuning.chunked_threads, rows.lanes);
    const int64_t chunks = ceil_div(rows.facts.groups, rows.lanes * rows.max_groups);
    schedule.grid_y =
        std::min<int64_t>({chunks, ceil_div(wanted_blocks(rows.device), schedule.grid_x), 65535});
  }
  return true;
}

bool shape_row_launch(InnerRows& rows) {
  ReductionParams& p = rows.params();
  p.threads_per_row = static_cast<int>(rows.lanes);
  p.groups_per_thread = static_cast<int>(
      p.persistent ? ceil_div(rows.facts.groups, rows.lanes * p.cluster) : rows.chunk_max_groups);
  p.block_size = static_cast<int>(rows.lanes >= 32 ? rows.lanes : kShortRowBlock);
  p.late_draws = rows.draws_late && p.persistent && p.cluster == 1;
  return true;
}

}  // namespace nvfuse
