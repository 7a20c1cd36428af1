// GEMM + reduce-scatter with the copy engine (symmetric_memory.h): the
// row-parallel GEMM of lower_gemm_reduce_scatter.h, as a loop over
// destination devices, this one last (its partial result only needs a
// local copy, so no transfer is left after the last GEMM). Stream 2
// multiplies the rows of destination j (one contiguous GEMM) and records
// an event; stream 1 waits for it and writes that partial result into
// slot [this device] of destination j's symmetric buffer by the copy
// engine, while stream 2 goes on with the next destination. After a
// barrier (every partial has arrived) each device sums its buffer's slots
// into its rows (float accumulation). The next call's first push waits
// behind a barrier on the copy stream until every device has summed.
#pragma once

#include <optional>

#include "multidevice/runtime/host/host_instructions.h"
#include "multidevice/runtime/host/pipelining_conditions.h"

namespace nvfuse {

std::optional<HostLoopProgram> lower_gemm_reduce_scatter_by_copy_engine(
    const Fusion& fusion, const Communication& comm);

}  // namespace nvfuse
