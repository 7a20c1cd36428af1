// All-gather + GEMM with the copy engine (symmetric_memory.h): A [M, ...,
// K] sharded on M by outer_split(0, D). Stream 2 first multiplies this
// device's own shard into its rows (no transfer) while stream 1 publishes
// the shard in symmetric memory (between two barriers, the first keeping
// it from overwriting a shard a peer still reads from the previous call).
// Then a loop over the other source devices: stream 1 reads source j's
// shard from its buffer by the copy engine and records an event, stream 2
// waits for it and multiplies that shard into the source's rows of the
// result, one contiguous GEMM. Reading shard j+1 overlaps the GEMM of
// shard j and takes no SMs from it.
#pragma once

#include <optional>

#include "multidevice/runtime/host/host_instructions.h"
#include "multidevice/runtime/host/pipelining_conditions.h"

namespace nvfuse {

std::optional<HostLoopProgram> lower_allgather_gemm_by_copy_engine(
    const Fusion& fusion, const Communication& comm);

}  // namespace nvfuse
