#include "schedule/reduction_params.h"

#include <algorithm>
#include <sstream>

#include "schedule/cluster_shapes.h"

namespace nvfuse {

int64_t partial_slot_bytes(const Expr& reduction) {
  return reduction.is<VarMeanOp>() ? 24 : 8;  // Welford: mean, m2, count
}

int64_t split_counters(const ReductionParams& params, int64_t grid_x, int64_t grid_y) {
  if (!params.outer) {
    return grid_x;
  }
  return grid_x * (1 + ceil_div(grid_y, kOuterSplitGroup));
}

std::vector<int64_t> column_partial_offsets(
    const ReductionAnalysis& analysis, int64_t partial_rows, int64_t width) {
  std::vector<int64_t> offsets{0};
  for (const Expr* r : analysis.outer_reductions) {
    // The accumulator: float for the half types, else the result's type.
    const int64_t element = std::max<int64_t>(4, size_in_bytes(r->output(0)->dtype()));
    const int64_t bytes = partial_rows * width * element;
    offsets.push_back(offsets.back() + ceil_div(bytes, 64) * 64);
  }
  return offsets;
}

std::string ReductionParams::to_string() const {
  std::ostringstream ss;
  ss << "ReductionParams(" << (outer ? "outer" : "inner") << ", row_rank=" << row_rank
     << ", vector_width=" << vector_width << ", block=" << block_size;
  if (outer) {
    ss << " (" << block_x << "x" << block_y << ")";
  } else if (width_generic && threads_per_row == 0) {
    ss << " (bound), threads_per_row=launch, groups_per_thread=" << groups_per_thread
       << ", persistent, width_generic";
  } else {
    ss << ", threads_per_row=" << threads_per_row << ", groups_per_thread=" << groups_per_thread
       << (persistent ? ", persistent" : ", chunked")
       << (width_generic ? ", width_generic (bound " + std::to_string(launch_bound) + ")"
                         : std::string());
  }
  ss << (split ? ", split" : "") << (inner_outer ? ", inner_outer" : "")
     << (pipelined ? ", pipelined" : "") << (carry_exps ? ", carry_exps" : "")
     << (late_draws ? ", late_draws" : "") << (staged ? ", staged" : "")
     << (hold_columns ? ", hold_columns" : "")
     << (cluster > 1 ? ", cluster=" + std::to_string(cluster) : std::string())
     << (partial_cluster > 1 ? ", partial_cluster=" + std::to_string(partial_cluster)
                             : std::string())
     << (min_blocks_per_sm > 0 ? ", min_blocks=" + std::to_string(min_blocks_per_sm)
                               : std::string())
     << (graph_rng ? ", graph_rng" : "")
     << (outer ? ", outer_batch=" + std::to_string(outer_batch) : std::string())
     << ", index=" << (index_32bit ? "int32" : "int64") << ", access=";
  for (InnerAccess a : access) {
    ss << (a == InnerAccess::kContiguous ? "c" : a == InnerAccess::kBroadcast ? "b" : "s");
  }
  ss << ")";
  return ss.str();
}

bool ReductionParams::operator==(const ReductionParams& o) const {
  return outer == o.outer && row_rank == o.row_rank && vector_width == o.vector_width &&
      block_size == o.block_size && threads_per_row == o.threads_per_row &&
      groups_per_thread == o.groups_per_thread && persistent == o.persistent &&
      block_x == o.block_x && block_y == o.block_y && outer_batch == o.outer_batch &&
      split == o.split && inner_outer == o.inner_outer && pipelined == o.pipelined &&
      cluster == o.cluster && partial_cluster == o.partial_cluster && carry_exps == o.carry_exps &&
      late_draws == o.late_draws && staged == o.staged && hold_columns == o.hold_columns &&
      min_blocks_per_sm == o.min_blocks_per_sm && index_32bit == o.index_32bit &&
      access == o.access && width_generic == o.width_generic && launch_bound == o.launch_bound &&
      graph_rng == o.graph_rng;
}

ReductionParams ReductionParams::kernel_params() const {
  if (!width_generic) {
    return *this;
  }
  ReductionParams kernel = *this;
  kernel.threads_per_row = 0;
  kernel.block_size = launch_bound;
  return kernel;
}

}  // namespace nvfuse
