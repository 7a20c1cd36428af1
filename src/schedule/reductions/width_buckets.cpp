// Inner rows: one kernel for a bucket of row widths (see
// ReductionParams::width_generic), when ReductionTuning::width_buckets asks
// for it. The launch shape of plain persistent rows follows the width
// (threads a row: a power of two; vector groups a thread: what the row
// needs), and baking it into the source makes softmax compile a kernel for
// almost every width (54 over 64 widths from 128 to 16384; 11 shared).
// The shared kernel takes the lanes from the launch and holds the most
// groups a thread takes, predicated past the row's end, so the width only
// picks the launch. What that costs is why it is not the default (H200,
// against each width's own kernel): every group's column is a runtime
// multiple of the lanes, which ptxas keeps in registers where a compiled-in
// one was an immediate offset (bf16 layer norm: 32 -> 40 registers a
// thread, 4 -> 3 blocks of 512 an SM, 1.2x the time at 32768x8192), and a
// row that needs 9 of 16 groups holds 16 (odd widths 1.3-2.2x).
#include "schedule/reductions/reduction_tactics.h"

namespace nvfuse {

namespace {

// __launch_bounds__ of the buckets, which also tell the kernel how a row's
// lanes combine: rows of at most a warp (several rows a block of 128,
// combined by shuffles); blocks of one row up to 512 threads (combined
// through shared memory; 128 registers a thread, what a 512-thread row
// already had); and 1024 (64 registers, which a smaller block must not be
// held to). One kernel for both kinds of row combined them by a branch on
// the lanes, which cost 8 registers a thread.
constexpr int kWarpRowsBound = kShortRowBlock;
constexpr int kBlockRowsBound = 512;
constexpr int kWidestBound = 1024;

bool plain_persistent_rows(const InnerRows& rows) {
  const ReductionParams& p = rows.walk.schedule.params;
  return p.persistent && p.cluster == 1 && rows.walk.schedule.grid_y == 1 && !p.pipelined &&
      !p.staged && !p.inner_outer && !p.late_draws;
}

}  // namespace

bool share_kernel_across_widths(InnerRows& rows) {
  ReductionParams& p = rows.params();
  p.width_generic = rows.tuning.width_buckets > 0 && plain_persistent_rows(rows);
  if (p.width_generic) {
    p.groups_per_thread = static_cast<int>(rows.max_groups);
    p.launch_bound = p.threads_per_row <= 32 ? kWarpRowsBound
        : p.block_size <= kBlockRowsBound    ? kBlockRowsBound
                                             : kWidestBound;
  }
  return true;
}

}  // namespace nvfuse
