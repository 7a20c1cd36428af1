// What heuristics may know of a runtime tensor, without torch: its dtype,
// logical sizes and strides (in elements) and its address (for alignment).
#pragma once

#include <cstdint>
#include <vector>

#include "ir/data_type.h"

namespace nvfuse {

struct TensorArg {
  DataType dtype = DataType::Null;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  uint64_t address = 0;
};

// What heuristics may know of the GPU.
struct DeviceInfo {
  int sm_count = 132;
  int arch = 90;
  int64_t l2_bytes = 50 * 1024 * 1024;  // an H100's
};

}  // namespace nvfuse
