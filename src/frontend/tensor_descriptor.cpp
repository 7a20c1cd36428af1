#include "frontend/tensor_descriptor.h"

#include <algorithm>
#include <numeric>

#include "ir/errors.h"
#include "ir/tensor_domain.h"

namespace nvfuse {

TensorDescriptor describe_tensor(
    const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  NVFUSE_CHECK(sizes.size() == strides.size(), "define_tensor: sizes has ", sizes.size(),
      " entries but strides has ", strides.size());
  const int64_t rank = static_cast<int64_t>(sizes.size());
  auto is_broadcast = [&](int64_t axis) { return sizes[axis] == 1 || strides[axis] == 0; };

  // Sort key: the axis's stride; a broadcast axis borrows the stride of the
  // nearest real axis to its right (or 0), and wins the tie by index.
  std::vector<int64_t> key(rank, 0);
  int64_t right_stride = 0;
  for (int64_t axis = rank - 1; axis >= 0; --axis) {
    if (!is_broadcast(axis)) {
      right_stride = strides[axis];
    }
    key[axis] = is_broadcast(axis) ? right_stride : strides[axis];
  }
  std::vector<int64_t> order(rank);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(
      order.begin(), order.end(), [&](int64_t a, int64_t b) { return key[a] > key[b]; });

  TensorDescriptor desc;
  desc.shape.resize(rank);
  for (int64_t axis = 0; axis < rank; ++axis) {
    desc.shape[axis] = sizes[axis] == 1 ? 1 : -1;
  }
  // Contiguity, innermost first: an axis is contiguous when its stride is
  // the size-stride product of the next real axis inside it.
  desc.contiguity.assign(rank, std::nullopt);
  int64_t expected_stride = 1;
  for (int64_t position = rank - 1; position >= 0; --position) {
    const int64_t axis = order[position];
    if (is_broadcast(axis)) {
      continue;
    }
    desc.contiguity[position] = strides[axis] == expected_stride;
    expected_stride = strides[axis] * sizes[axis];
  }
  std::vector<int64_t> identity(rank);
  std::iota(identity.begin(), identity.end(), 0);
  if (order != identity) {
    desc.stride_order = stride_order_from_allocation_order(order);
  }
  return desc;
}

}  // namespace nvfuse
