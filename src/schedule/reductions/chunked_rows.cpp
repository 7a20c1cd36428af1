// Inner rows that neither one block nor a cluster holds in registers:
// walked in chunks of ReductionTuning::chunked_threads threads, each phase
// re-reading the row; a cluster of blocks may stream a row together
// (ReductionParams::streamed) so that the few rows in flight stay in L2.
#include <algorithm>

#include "schedule/cluster_shapes.h"
#include "schedule/reductions/reduction_tactics.h"

namespace nvfuse {

namespace {

constexpr int kShortChunkThreads = 512;  // chunked rows of at most two chunks
// A chunked row of phases streams at most this many bytes of its held
// inputs a thread per chunk: 1024-thread blocks get 64 registers, and bias
// + residual + layer norm fp32 at 262144 (two fp32 inputs, 128 bytes)
// spilled 44 bytes.
constexpr int64_t kMaxChunkedRowBytes = 64;
// Streamed inner-outer rows hold at most this many elements of each input
// a chunk: layer-norm backward bf16 at two groups of 8 (1024 threads, 64
// registers) spilled 16 bytes.
constexpr int64_t kMaxStreamedColumnElements = 8;

}  // namespace

bool chunk_long_rows(InnerRows& rows) {
  ReductionParams& p = rows.params();
  if (p.persistent) {
    return true;
  }
  const InnerRowFacts& facts = rows.facts;
  rows.lanes = rows.tuning.chunked_threads;
  if (rows.analysis.last_element_phase > 0 && facts.held_bytes_per_group > 0) {
    rows.chunk_max_groups =
        std::clamp<int64_t>(kMaxChunkedRowBytes / facts.held_bytes_per_group, 1, rows.max_groups);
  }
  // A row of at most two 1024-thread chunks spends a large share of its
  // time in its final block reduction, and a 1024-thread block (one an SM
  // above 32 registers) leaves its SM nothing loading meanwhile: 512
  // threads, two blocks an SM. H100, % of copy bandwidth, 1024 -> 512:
  // var_mean bf16 4096x65536 89 -> 100 (fp32 and sums there 102-104 either
  // way); longer rows amortize the reduction and lose (layer norm bf16
  // 512x262144 63 -> 57).
  if (rows.lanes > kShortChunkThreads && facts.groups <= 2 * rows.lanes * rows.chunk_max_groups) {
    rows.lanes = kShortChunkThreads;
  }
  const int64_t streamed_groups = rows.analysis.has_outer_reductions()
      ? std::min<int64_t>(rows.chunk_max_groups,
            std::max<int64_t>(1, kMaxStreamedColumnElements / p.vector_width))
      : rows.chunk_max_groups;
  p.cluster = streamed_cluster_blocks(rows.analysis, facts.groups,
      rows.tuning.chunked_threads * streamed_groups, facts.held_bytes_per_group, rows.device,
      rows.tuning);
  if (p.cluster > 1) {
    rows.chunk_max_groups = streamed_groups;
    rows.lanes = rows.tuning.chunked_threads;
  }
  return true;
}

}  // namespace nvfuse
