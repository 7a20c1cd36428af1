// How many chunks a pipelined loop cuts its work into when the user did
// not say (a stream axis, stream_chunks.h), and how many worker streams
// it puts them on.
#pragma once

#include <cstdint>

namespace nvfuse {

// For `rows` local rows to cut: NVFUSE_OVERLAP_CHUNKS when set (the
// largest divisor of `rows` not above it), else 2 chunks of at least
// kMinChunkRows rows each, else 1. On 2 and 4 H200s two chunks were the
// fastest of 2, 4 and 8 for the NCCL all-gather + GEMM at every measured
// shape (by 3-13% against 4): each further chunk adds a thinner GEMM and
// another collective whose kernels take SMs from the GEMM.
int64_t choose_chunks(int64_t rows);
inline constexpr int64_t kMinChunkRows = 256;

// NVFUSE_OVERLAP_STREAMS (default 2), at most `chunks`: two streams let
// one chunk's GEMM run while the next chunk's communication is in flight.
int64_t worker_stream_count(int64_t chunks);

}  // namespace nvfuse
