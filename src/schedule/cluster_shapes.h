// The thread block clusters (sm_90) of the reduction kernels, for
// the reduction tactics (schedule/reductions/): how many blocks hold an inner
// row too long for one block (in registers or staging buffers), how many
// stream a row that no cluster holds, how many blocks of a cluster that
// walks inner-outer rows an SM holds, how many blocks split an outer
// reduction's rows, and how many walking blocks combine their inner-outer
// partials.
#pragma once

#include <cstdint>
#include <optional>

#include "schedule/reduction_analysis.h"
#include "schedule/reduction_params.h"
#include "schedule/tensor_arg.h"

namespace nvfuse {

// Shared memory of an sm_90 SM.
constexpr int64_t kSharedBytesPerSm = 228 * 1024;

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

inline int64_t next_pow2(int64_t v) {
  int64_t p = 1;
  while (p < v) {
    p *= 2;
  }
  return p;
}

struct ClusterShape {
  int blocks = 1;
  int64_t lanes = 1;
};

// How a cluster row's threads take twice `max_groups` (see cluster_for_row).
enum class DoubleGroups { kFromEightBlocks, kAlways, kNever };

// The fewest blocks that hold a row of `groups` vector groups, and their
// threads; nullopt where no cluster of at most `max_blocks` does.
std::optional<ClusterShape> cluster_for_row(int64_t groups, int64_t max_groups,
    int64_t held_bytes_per_group, int max_blocks, DoubleGroups doubling,
    const ReductionTuning& tuning);

// The blocks of a cluster that streams a chunked row (re-read per phase from
// L2), or 1: one block per row chunks it.
int streamed_cluster_blocks(const ReductionAnalysis& analysis, int64_t groups, int64_t chunk_groups,
    int64_t held_bytes_per_group, const DeviceInfo& device, const ReductionTuning& tuning);

// The blocks of an inner-outer cluster row an SM holds.
int cluster_blocks_per_sm(int block_size, int64_t shared_bytes);

// The launch shape of an outer reduction that would split its `walk_rows`
// rows over gridDim.y when it splits them over the blocks of a thread
// block cluster instead (ReductionParams::cluster on an outer kernel):
// `blocks` 1 where the global split stays (the other fields then unset).
struct OuterClusterShape {
  int blocks = 1;      // of a cluster
  int block_x = 0;     // threads across the columns (vector groups)
  int block_size = 0;  // threads of a block
  int64_t grid_x = 0;  // blocks of the launch: `blocks` a column group
};
OuterClusterShape outer_split_cluster_shape(const ReductionAnalysis& analysis,
    int64_t vector_groups, int64_t walk_rows, const DeviceInfo& device);

// ReductionParams::partial_cluster of inner-outer rows that one block holds
// (`p`, without a row cluster), or 1; `shared_bytes`: the block's shared
// memory with the partials combined through it.
int partial_cluster_blocks(const ReductionAnalysis& analysis, const ReductionParams& p,
    int64_t rows, int64_t shared_bytes, bool holds_only_half_types, const DeviceInfo& device);

}  // namespace nvfuse
