// The last choices of both tactics: values carried in registers across
// phases (ReductionParams::carry_exps), the register budget of late-drawing
// rows, and the workspace of a split reduction.
#include "schedule/reductions/reduction_tactics.h"

namespace nvfuse {

namespace {

// Late-draw rows that carry their exps (ReductionParams::late_draws) state
// this many threads a SM over their block size as __launch_bounds__'s
// blocks per SM: 64 registers a thread.
constexpr int kLateDrawRegisterBlocks = 1024;
// Those with a masked fill hold twice the elements (row_elements.cpp): 72
// registers a thread; at 64 their bf16 attention prologue spilled 24 bytes
// (and measured 88 / 98% of copy bandwidth at 64 / 256 MB on an H100 with
// the spills, 85 / 94 at 80 registers).
constexpr int kMaskedLateDrawRegisterBlocks = 896;

int64_t split_slot_bytes(const ReductionAnalysis& analysis) {
  int64_t bytes = 0;
  for (const Expr* r : analysis.reductions) {
    bytes += partial_slot_bytes(*r);
  }
  return bytes;
}

}  // namespace

void finish_reduction_schedule(const ReductionAnalysis& analysis, const ReductionTuning& tuning,
    ReductionSchedule& schedule, bool masked_late_draws) {
  ReductionParams& p = schedule.params;
  // Split rows are chunked, so `persistent` excludes them too.
  p.carry_exps = tuning.carry_exps > 0 && !p.outer && p.persistent && !p.inner_outer &&
      p.cluster == 1 && !analysis.exps_read_again().empty();
  if (p.late_draws && p.carry_exps) {
    p.min_blocks_per_sm =
        (masked_late_draws ? kMaskedLateDrawRegisterBlocks : kLateDrawRegisterBlocks) /
        p.block_size;
  }
  p.split = schedule.grid_y > 1;
  if (p.split) {
    schedule.workspace_bytes = schedule.grid_y * schedule.space.rows * split_slot_bytes(analysis);
  }
}

}  // namespace nvfuse
