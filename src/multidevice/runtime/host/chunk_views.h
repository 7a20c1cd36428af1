// Chunk i of a tensor, as a view (host_instructions.h: ChunkView).
#pragma once

#include <ATen/core/Tensor.h>

#include "multidevice/runtime/host/host_instructions.h"

namespace nvfuse {

// `devices`: the team size (kInterleaved's leading part); `member`: this
// device's position in the team (kSourceRows); `name`: the tensor, for the
// error when `chunks` does not divide the axis.
at::Tensor view_chunk(const at::Tensor& t, ChunkView view, int64_t axis, int64_t chunks,
    int64_t devices, int64_t index, const std::string& name, int64_t member = 0);

}  // namespace nvfuse
