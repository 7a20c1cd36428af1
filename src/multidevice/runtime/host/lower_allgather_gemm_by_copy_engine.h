// All-gather + GEMM with the copy engine (symmetric_memory.h): A [M, ...,
// K] sharded on M by outer_split(0, D). Each device publishes its shard in
// symmetric memory; then a loop over the D source devices, this one
// first: stream 1 reads source j's shard from its buffer by the copy
// engine (none for this device's own) and records an event, stream 2
// waits for it and multiplies that shard into the source's rows of the
// result, one contiguous GEMM. Reading shard j+1 overlaps the GEMM of
// shard j and takes no SMs from it. A barrier after the loop frees the
// buffers for the next call.
#pragma once

#include <optional>

#include "multidevice/runtime/host/host_instructions.h"
#include "multidevice/runtime/host/pipelining_conditions.h"

namespace nvfuse {

std::optional<HostLoopProgram> lower_allgather_gemm_by_copy_engine(
    const Fusion& fusion, const Communication& comm);

}  // namespace nvfuse
