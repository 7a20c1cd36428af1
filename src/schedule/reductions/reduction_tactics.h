// The reduction tactics and the choices they are made of. schedule_reduction
// (schedule_reduction.cpp) walks the reduction (reduction_walk.h), picks
// the outer-column tactic or the inner-row one, and runs the inner rows'
// choices in the order of its table; each choice is a small function in a
// file of its own that reads the facts of the rows and what the choices
// before it decided.
#pragma once

#include <cstdint>

#include "schedule/reduction_analysis.h"
#include "schedule/reduction_params.h"
#include "schedule/reductions/reduction_walk.h"

namespace nvfuse {

constexpr int kShortRowBlock = 128;  // inner rows: a block of several short rows

// Blocks that fill the GPU: two a multiprocessor.
inline int64_t wanted_blocks(const DeviceInfo& device) {
  return 2 * static_cast<int64_t>(device.sm_count);
}

// Outer reductions (the kept axis is contiguous): threads own vectors of
// adjacent columns and walk down the rows (outer_columns.cpp).
void schedule_outer_columns(const ReductionAnalysis& analysis, ReductionWalk& walk,
    const DeviceInfo& device, const ReductionTuning& tuning);

// What the inner-row choices read: facts of this call's rows, fixed before
// the first choice (inner_row_facts.cpp).
struct InnerRowFacts {
  int64_t groups = 1;  // vector groups of a row
  bool writes_elements = false;
  // Bytes of row-varying inputs a thread holds per vector group, and of
  // how many inputs.
  int64_t held_bytes_per_group = 0;
  int held_tensors = 0;
  bool holds_only_half_types = true;
  // Staged rows (ReductionParams::staged) are possible, and pay for
  // inner-outer rows.
  bool stageable = false;
  bool stages_inner_outer = false;
  bool draws_random = false;
  bool half_random_rows = false;  // random values in rows of half types
  bool half_vectors = false;      // half types in 16-byte groups
  // The threads a row takes at `row_elements` a thread (a power of two).
  int64_t row_threads(int64_t row_elements, int vector_width) const;
};

// The inner rows being scheduled: the facts, the schedule, and what the
// choices decided that the params do not hold.
struct InnerRows {
  const ReductionAnalysis& analysis;
  const DeviceInfo& device;
  const ReductionTuning& tuning;
  ReductionWalk& walk;
  InnerRowFacts facts;
  // Threads a row (or a cluster's block) takes, and the vector groups a
  // thread holds: persistent rows at most max_groups, chunked rows
  // chunk_max_groups a chunk.
  int64_t lanes = 1;
  int64_t max_groups = 1;
  int64_t chunk_max_groups = 1;
  // Random values are drawn after phase 0 (ReductionParams::late_draws),
  // with a masked fill whose filled groups skip their draws.
  bool draws_late = false;
  bool masked_late_draws = false;
  // The row is held by a cluster of blocks whose next rows are staged.
  bool staged_cluster = false;

  ReductionSchedule& schedule() { return walk.schedule; }
  ReductionParams& params() { return walk.schedule.params; }
};

InnerRowFacts inner_row_facts(const ReductionAnalysis& analysis, ReductionWalk& walk,
    const DeviceInfo& device, const ReductionTuning& tuning);

// The inner-row choices, one file each; false declines the reduction (the
// executor then segments the fusion or falls back).
bool choose_row_elements(InnerRows& rows);         // row_elements.cpp
bool hold_rows_in_clusters(InnerRows& rows);       // cluster_rows.cpp
bool chunk_long_rows(InnerRows& rows);             // chunked_rows.cpp
bool split_few_rows(InnerRows& rows);              // split_rows.cpp
bool shape_row_launch(InnerRows& rows);            // split_rows.cpp
bool stage_rows(InnerRows& rows);                  // staged_rows.cpp
bool place_column_partials(InnerRows& rows);       // inner_outer_rows.cpp
bool pipeline_rows(InnerRows& rows);               // pipelined_rows.cpp
bool cluster_column_partials(InnerRows& rows);     // inner_outer_rows.cpp
bool share_kernel_across_widths(InnerRows& rows);  // width_buckets.cpp

// Both tactics, last: values held in registers across phases (carried exps,
// late draws' register budget), and the split workspace
// (register_budget.cpp).
void finish_reduction_schedule(const ReductionAnalysis& analysis, const ReductionTuning& tuning,
    ReductionSchedule& schedule, bool masked_late_draws);

}  // namespace nvfuse
