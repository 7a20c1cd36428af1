// How many chunks a pipelined loop cuts its work into when the user did
// not say (a stream axis, stream_chunks.h), and how many worker streams
// it puts them on.
#pragma once

#include <cstdint>

namespace nvfuse {

// For `rows` local rows to cut: NVFUSE_OVERLAP_CHUNKS when set (the
// largest divisor of `rows` not above it), else 4 or 2 chunks of at least
// kMinChunkRows rows each, else 1. Four chunks hide all but a quarter of
// the first chunk's communication; more make each GEMM too thin for the
// tensor cores to stay busy.
int64_t choose_chunks(int64_t rows);
inline constexpr int64_t kMinChunkRows = 256;

// NVFUSE_OVERLAP_STREAMS (default 2), at most `chunks`: two streams let
// one chunk's GEMM run while the next chunk's communication is in flight.
int64_t worker_stream_count(int64_t chunks);

}  // namespace nvfuse
