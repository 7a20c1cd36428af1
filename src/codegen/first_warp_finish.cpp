// Whether a row's last reduction finishes in the block's first warp only
// (nvfuse::reduce_into_first_warp): see ReductionGenerator::finishes_in_first_warp.

#include "codegen/reduction_generator.h"

namespace nvfuse {

bool ReductionGenerator::finishes_in_first_warp(
    int phase, const std::vector<const Expr*>& plain_reductions) const {
  // After the last phase's reductions a row computes per-row values and
  // lane 0 stores them: nothing else reads the other warps. A block of one
  // row only (a block that walks rows, a split or a cluster row needs all
  // its warps again), and the phase's reductions in one call (a Welford
  // state reduced on its own would wait at a barrier the others left).
  if (phase != a_.last_element_phase || plain_reductions.empty()) {
    return false;
  }
  const bool one_row_of_warps = p_.width_generic
      ? !warp_rows_at_launch()
      : p_.threads_per_row == p_.block_size && p_.block_size > 32;
  if (!one_row_of_warps || p_.cluster > 1 || p_.split || p_.pipelined || p_.staged ||
      p_.inner_outer || streamed()) {
    return false;
  }
  return plain_reductions.size() == reductions_of_phase(phase).size();
}

}  // namespace nvfuse
