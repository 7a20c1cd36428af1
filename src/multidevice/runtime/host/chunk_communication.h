// A communication of one chunk between preallocated buffers, posted on the
// current stream (the pipelined loops of host_instructions.h): an
// Allgather of a device's chunk into [devices, chunk...], or a
// ReduceScatter of [devices, chunk...] partial results into the device's
// chunk. The team's members must be in ascending order (the lowerings
// pipeline only such meshes), so group ranks are shard positions.
#pragma once

#include "multidevice/runtime/post_communication.h"

namespace nvfuse {

// Returns the posted work, or null for a team of one (a copy on the
// current stream).
CommunicationWork post_chunk_communication(
    const Communication& comm, const Team& team, at::Tensor dst, const at::Tensor& src);

}  // namespace nvfuse
