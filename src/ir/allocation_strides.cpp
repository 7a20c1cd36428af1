#include "ir/allocation_strides.h"

#include <algorithm>
#include <numeric>

#include "ir/tensor_view.h"

namespace nvfuse {

std::vector<int64_t> strides_for_allocation(
    const TensorView& tv, const std::vector<int64_t>& logical_sizes) {
  const int64_t rank = tv.rank();
  NVFUSE_ASSERT_EQ(static_cast<int64_t>(logical_sizes.size()), rank, "output rank");
  auto permutation = tv.domain().allocation_permutation();
  if (!permutation.has_value()) {
    NVFUSE_UNSUPPORTED(
        "outputs whose allocation domain is not a permutation of the logical "
        "domain (",
        tv.name(), ")");
  }
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = 1;
  for (int64_t position = rank - 1; position >= 0; --position) {
    const int64_t axis = (*permutation)[position];
    if (tv.logical()[axis]->is_expanded()) {
      continue;  // stride 0
    }
    strides[axis] = stride;
    stride *= std::max<int64_t>(logical_sizes[axis], 1);
  }
  return strides;
}

}  // namespace nvfuse
