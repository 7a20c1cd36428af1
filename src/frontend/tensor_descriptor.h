// What define_tensor(sizes=, strides=) and fd.from_pytorch(t) record for a
// tensor of the given sizes and strides.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace nvfuse {

struct TensorDescriptor {
  std::vector<int64_t> shape;                   // -1 symbolic, 1 broadcast
  std::vector<std::optional<bool>> contiguity;  // allocation order
  std::vector<int64_t> stride_order;            // empty when row-major
};

// Size-1 axes become broadcasts; stride-0 axes of size > 1 become expanded
// broadcasts (shape -1, contiguity None). The stride order sorts axes by
// stride, outermost first; broadcast axes, whose strides say nothing, sit
// just outside the next real axis to their right, so a row-major tensor with
// size-1 axes stays row-major.
TensorDescriptor describe_tensor(
    const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides);

}  // namespace nvfuse
