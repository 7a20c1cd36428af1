// schedule_reduction: the reduction tactics' rule list. A reduction is
// walked as rows x reduced width (reduction_walk.cpp); where the kept axis
// is contiguous in the main tensor it takes the outer-column tactic,
// otherwise the inner-row tactic, whose choices run in the order of
// kInnerRowChoices below. Every choice is a file of this folder with the
// measurements behind its rules.
#include "schedule/reduction_params.h"

#include "schedule/reductions/reduction_tactics.h"

namespace nvfuse {

namespace {

// A choice: false declines the reduction.
using InnerRowChoice = bool (*)(InnerRows&);

// In order: later choices read what earlier ones decided.
constexpr InnerRowChoice kInnerRowChoices[] = {
    choose_row_elements,         // elements a thread holds; persistent or not
    hold_rows_in_clusters,       // long rows held by a thread block cluster
    chunk_long_rows,             // rows no cluster holds, walked in chunks
    split_few_rows,              // few rows split over blocks
    shape_row_launch,            // threads, groups and block of the launch
    stage_rows,                  // next rows staged in shared memory
    place_column_partials,       // inner-outer column partials
    pipeline_rows,               // next row loaded while this one reduces
    cluster_column_partials,     // inner-outer partials combined in clusters
    share_kernel_across_widths,  // one kernel for a bucket of row widths
};

// The reduced axis is the main tensor's innermost (or there is none).
bool reduces_inner_axis(const ReductionWalk& walk) {
  const ReductionSpace& space = walk.schedule.space;
  const int main = walk.main_tensor;
  return main < 0 || space.col_strides[main] == 1 || space.width <= 1;
}

// The kept axis is contiguous in the main tensor and the reduced one is
// not: the outer-column tactic (rows gathered by index and later phases
// need the inner rows' walk).
bool walks_columns(const ReductionAnalysis& analysis, const ReductionWalk& walk) {
  const int main = walk.main_tensor;
  const bool main_outer_contiguous = main >= 0 && walk.schedule.space.row_strides[main].back() == 1;
  return !reduces_inner_axis(walk) && main_outer_contiguous && analysis.last_element_phase == 0 &&
      !analysis.has_row_gather();
}

}  // namespace

std::optional<ReductionSchedule> schedule_reduction(const ReductionAnalysis& analysis,
    const std::vector<int64_t>& reference_sizes, const std::vector<TensorArg>& inputs,
    const std::vector<TensorArg>& outputs, const std::vector<TensorArg>& positions,
    const DeviceInfo& device, const ReductionTuning& tuning) {
  std::optional<ReductionWalk> walk =
      walk_reduction(analysis, reference_sizes, inputs, outputs, positions);
  if (!walk.has_value()) {
    return std::nullopt;
  }
  ReductionSchedule& schedule = walk->schedule;
  schedule.params.outer = walks_columns(analysis, *walk);
  if (analysis.has_outer_reductions() && !reduces_inner_axis(*walk)) {
    return std::nullopt;  // inner-outer walks rows; the segments take it
  }
  if (schedule.space.rows == 0 && !analysis.has_outer_reductions()) {
    return schedule;  // grid_x = 0: nothing to do
  }
  bool masked_late_draws = false;
  if (schedule.params.outer) {
    schedule_outer_columns(analysis, *walk, device, tuning);
  } else {
    InnerRows rows{
        analysis, device, tuning, *walk, inner_row_facts(analysis, *walk, device, tuning)};
    for (InnerRowChoice choose : kInnerRowChoices) {
      if (!choose(rows)) {
        return std::nullopt;
      }
    }
    masked_late_draws = rows.masked_late_draws;
  }
  finish_reduction_schedule(analysis, tuning, schedule, masked_late_draws);
  return schedule;
}

}  // namespace nvfuse
