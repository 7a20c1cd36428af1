// The facts the inner-row choices read: the rows' vector width and access
// (set in the params here), and what a thread holds per vector group.
#include <algorithm>

#include "schedule/cluster_shapes.h"
#include "schedule/reductions/reduction_tactics.h"

namespace nvfuse {

namespace {

bool any_random_positions(const ReductionAnalysis& analysis) {
  return std::any_of(analysis.position_tensors.begin(), analysis.position_tensors.end(),
      [](const TensorView* tv) { return tv->definition()->is<RngOp>(); });
}

bool any_welford_column(const ReductionAnalysis& analysis) {
  return std::any_of(analysis.outer_reductions.begin(), analysis.outer_reductions.end(),
      [](const Expr* r) { return r->is<VarMeanOp>(); });
}

}  // namespace

int64_t InnerRowFacts::row_threads(int64_t row_elements, int vector_width) const {
  return next_pow2(ceil_div(groups, std::max<int64_t>(1, row_elements / vector_width)));
}

InnerRowFacts inner_row_facts(const ReductionAnalysis& analysis, ReductionWalk& walk,
    const DeviceInfo& device, const ReductionTuning& tuning) {
  ReductionParams& p = walk.schedule.params;
  const ReductionSpace& space = walk.schedule.space;
  for (size_t t = 0; t < walk.tensors.size(); ++t) {
    p.access.push_back(
        walk.per_element[t] ? inner_access_of(space.col_strides[t]) : InnerAccess::kBroadcast);
  }
  p.vector_width = vector_width_for(
      walk.tensors, walk.per_element, walk.per_element, p.access, space.width, space.row_strides);
  InnerRowFacts facts;
  facts.groups = std::max<int64_t>(1, ceil_div(space.width, p.vector_width));
  for (size_t t = walk.input_count; t < walk.tensors.size(); ++t) {
    facts.writes_elements = facts.writes_elements || walk.per_element[t];
  }
  // Staged rows (ReductionParams::staged) copy each held group whole:
  // contiguous vectors of 4, 8 or 16n bytes (cp.async's sizes). Rows that
  // phases read again only, and only on sm_90 (the cluster rows').
  // tuning.staging 1 stages some cluster rows (cluster_rows.cpp); 2 every
  // row it can.
  bool stageable = tuning.staging > 0 && device.arch >= 90 && analysis.last_element_phase > 0;
  for (size_t t = 0; t < walk.input_count; ++t) {
    // What the kernel holds (ReductionGenerator::held): by the fusion's
    // axes, not this call's strides (a single row's are all 0).
    if (!walk.per_element[t] || analysis.is_per_column(analysis.inputs[t])) {
      continue;
    }
    const int width = p.access[t] == InnerAccess::kBroadcast ? 1 : p.vector_width;
    const int64_t group_bytes = width * size_in_bytes(walk.tensors[t].dtype);
    facts.held_bytes_per_group += group_bytes;
    ++facts.held_tensors;
    facts.holds_only_half_types =
        facts.holds_only_half_types && size_in_bytes(walk.tensors[t].dtype) <= 2;
    stageable = stageable && p.access[t] == InnerAccess::kContiguous &&
        (group_bytes % 16 == 0 || group_bytes == 4 || group_bytes == 8);
  }
  // A staged inner-outer thread's partials are vectors of plain values (a
  // Welford state has no vector type).
  facts.stageable = stageable && facts.held_tensors > 0 && !any_welford_column(analysis);
  // Inner-outer rows (the backward norms) staged keep their column
  // partials in registers instead of shared memory. H100, % of copy
  // bandwidth, unstaged -> staged: layer-norm backward bf16
  // 4096x65536 64 -> 77 (clusters of 8 blocks of 512 threads, two blocks
  // an SM), 32768x8192 79 -> 85; but fp32 88 -> 87 and 96 -> 96, and
  // RMS-norm backward (one column reduction) bf16 84 -> 76, fp32 90 -> 82.
  facts.stages_inner_outer =
      facts.stageable && analysis.outer_reductions.size() >= 2 && facts.holds_only_half_types;
  // Random values in rows of half types: see ReductionParams::late_draws.
  facts.draws_random = any_random_positions(analysis);
  facts.half_random_rows = facts.draws_random && facts.holds_only_half_types;
  // Half types in 16-byte groups: a lane of a narrower group (an odd width)
  // takes a register of its own, not half of one.
  facts.half_vectors = facts.holds_only_half_types && p.vector_width >= 8;
  return facts;
}

}  // namespace nvfuse
