// All-gather + GEMM as a pipelined loop (seed 004). An Allgather of A along
// its rows whose only reader is a matmul or linear becomes: for each chunk
// i on worker stream i % streams, all-gather chunk i of every device's
// rows into its slot of a [chunks, devices, ...] buffer, wait for it on
// that stream, and multiply it into its rows of the result, so that chunk
// i's GEMM runs while chunk i+1 is gathered.
//
// Two shapes of A:
// - [M, ..., K] sharded on M by outer_split(0, D): each device's rows are
//   cut into chunks of c rows (its stream split outer_split(1, S) after
//   the device split, or on the GEMM's output outer_split(0, S); else
//   chunk_count.h chooses); chunk i of the result is the rows
//   d * M/D + i * c .. + c of every device d, a strided view written by
//   one batched GEMM.
// - the seed's [S, DIDx(D), M/(S*D), K] with axis 0 on ParallelType.stream
//   (on A or the output): chunk i is A[i], the result's [S, D, M/(S*D), N]
//   chunk i is contiguous.
#pragma once

#include <optional>

#include "multidevice/runtime/host/host_instructions.h"
#include "multidevice/runtime/host/pipelining_conditions.h"

namespace nvfuse {

std::optional<HostLoopProgram> lower_allgather_gemm(
    const Fusion& fusion, const Communication& comm, const StreamAnnotations& annotations);

// The matmul or linear that reads `comm`'s gathered tensor, when it is its
// only reader, on the same one-team mesh; else null.
const Expr* gemm_after_allgather(const Fusion& fusion, const Communication& comm);

}  // namespace nvfuse
