// The coordinate scheduler's heuristics: one thread per element of the
// iteration space (the outputs' logical shape), `unroll` elements per
// thread a block apart, so a warp's loads and stores stay coalesced along
// the innermost axis whatever an operand's coordinates are shifted by.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schedule/tensor_arg.h"

namespace nvfuse {

struct CoordinateParams {
  int rank = 0;  // of the iteration space
  int block_size = 256;
  int unroll = 4;
  bool index_32bit = true;

  std::string to_string() const;
  bool operator==(const CoordinateParams& other) const;
};

struct CoordinateSchedule {
  CoordinateParams params;
  int64_t numel = 0;
  int64_t grid_size = 0;  // blocks; 0 when there is nothing to do
};

// `tensors`: every tensor the kernel reads or writes; `extents`: the
// iteration space. 32-bit indexing when every offset fits.
CoordinateSchedule schedule_coordinates(
    const std::vector<int64_t>& extents,
    const std::vector<TensorArg>& tensors);

}  // namespace nvfuse
