// Strides of a tensor laid out by its allocation domain.
#pragma once

#include <cstdint>
#include <vector>

namespace nvfuse {

class TensorView;

// Strides (in elements, per logical axis) of `tv` with the given logical
// sizes, packed in allocation order (outermost first); 0 on expanded
// broadcast axes, which occupy no memory.
std::vector<int64_t> strides_for_allocation(
    const TensorView& tv, const std::vector<int64_t>& logical_sizes);

}  // namespace nvfuse
