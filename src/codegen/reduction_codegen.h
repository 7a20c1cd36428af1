// (fusion, ReductionParams) -> CUDA C++: the inner (row per lanes, phases
// over a persistent or chunked row) and outer (columns per thread, walking
// down the rows) reduction kernels, with the fusion's exprs inlined as one
// statement each.
#pragma once

#include "codegen/kernel_args.h"
#include "schedule/reduction_analysis.h"
#include "schedule/reduction_params.h"

namespace nvfuse {

// Inner-outer kernels come with a second kernel, <name>_finish,
// over the same Args, that combines the blocks' partial rows: blocks of
// kFinishThreads threads, one per group of finish_columns(partial_rows)
// columns; the threads of a column walk down the partial rows, each
// loading kFinishBatch of them before it adds them. The kernel computes
// the same shape from args.partial_rows:
// - 32 columns a block (64 threads down them where the partials are float
//   vectors) over many partial rows and narrow rows (2048 x 1600: 50
//   blocks);
// - 256 columns a block (8 threads down them) where each thread takes at
//   most one batch of partial rows. With 32, the 7 partial rows of a
//   streamed 262144-wide layer-norm backward left 57 of every 64 threads
//   without a row, and 8192 blocks took 57 us for 15 MB.
constexpr int kFinishThreads = 512;
constexpr int kFinishBatch = 4;
constexpr int kFinishTallColumns = 32;
constexpr int kFinishWideColumns = 256;
constexpr int kFinishWideRows = 8 * kFinishBatch;

inline int finish_columns(int64_t partial_rows) {
  return partial_rows <= kFinishWideRows ? kFinishWideColumns : kFinishTallColumns;
}

KernelSource generate_reduction_kernel(
    const ReductionAnalysis& analysis, const ReductionParams& params);

}  // namespace nvfuse
