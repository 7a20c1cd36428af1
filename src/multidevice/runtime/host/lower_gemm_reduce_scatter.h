// GEMM + reduce-scatter as a pipelined loop: a row-parallel matmul or
// linear (A sharded on K, so each device holds a partial [M, ..., N])
// whose partial result is only reduce-scattered along its rows. Each
// device's output rows are cut into chunks of c rows (a stream split
// outer_split(1, S) after the device split of the output, or of A's rows;
// else chunk_count.h chooses); for chunk i on worker stream i % streams,
// the GEMM computes rows d * M/D + i * c .. + c for every device d (a
// strided view of A, one batched GEMM) into a [devices, c, ..., N]
// buffer, and its ReduceScatter is posted at once, so that it runs while
// chunk i+1 is multiplied. The caller's stream waits for every
// ReduceScatter after the loop.
#pragma once

#include <optional>

#include "multidevice/runtime/host/host_instructions.h"
#include "multidevice/runtime/host/pipelining_conditions.h"

namespace nvfuse {

std::optional<HostLoopProgram> lower_gemm_reduce_scatter(
    const Fusion& fusion, const Communication& comm, const StreamAnnotations& annotations);

// The matmul or linear (no bias) whose partial result only `comm`, a sum
// ReduceScatter along axis 0 over one team, reads; else null.
const Expr* gemm_before_reduce_scatter(const Fusion& fusion, const Communication& comm);

}  // namespace nvfuse
