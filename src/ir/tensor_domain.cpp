#include "ir/tensor_domain.h"

#include <algorithm>

#include "ir/axes.h"
#include "ir/errors.h"

namespace nvfuse {

TensorDomain::TensorDomain(
    std::vector<IterDomain*> logical, std::vector<std::optional<bool>> contiguity)
    : logical_(std::move(logical)), allocation_(logical_), loop_(logical_) {
  if (contiguity.empty()) {
    contiguity = contiguous_for(allocation_);
  }
  set_allocation(allocation_, std::move(contiguity));
}

std::vector<std::optional<bool>> TensorDomain::contiguous_for(
    const std::vector<IterDomain*>& allocation) {
  std::vector<std::optional<bool>> contiguity;
  contiguity.reserve(allocation.size());
  for (IterDomain* id : allocation) {
    contiguity.push_back(id->is_broadcast() ? std::nullopt : std::optional<bool>(true));
  }
  return contiguity;
}

void TensorDomain::set_allocation(
    std::vector<IterDomain*> allocation, std::vector<std::optional<bool>> contiguity) {
  NVFUSE_ASSERT_EQ(
      allocation.size(), contiguity.size(), "contiguity must have one entry per allocation axis");
  for (size_t i = 0; i < allocation.size(); ++i) {
    NVFUSE_ASSERT(allocation[i]->is_broadcast() != contiguity[i].has_value(),
        "contiguity must be None exactly on broadcast axes");
  }
  allocation_ = std::move(allocation);
  contiguity_ = std::move(contiguity);
}

std::optional<std::vector<int64_t>> TensorDomain::allocation_permutation() const {
  if (allocation_.size() != logical_.size()) {
    return std::nullopt;
  }
  std::vector<int64_t> order;
  order.reserve(allocation_.size());
  for (IterDomain* id : allocation_) {
    auto it = std::find(logical_.begin(), logical_.end(), id);
    if (it == logical_.end()) {
      return std::nullopt;
    }
    order.push_back(it - logical_.begin());
  }
  return order;
}

std::vector<int64_t> allocation_order_from_stride_order(const std::vector<int64_t>& stride_order) {
  NVFUSE_CHECK(
      is_permutation(stride_order), "stride_order must hold each of 0..rank-1 exactly once");
  const int64_t rank = static_cast<int64_t>(stride_order.size());
  std::vector<int64_t> order(rank);
  for (int64_t axis = 0; axis < rank; ++axis) {
    // Stride rank 0 is the fastest axis: the last in allocation order.
    order[rank - 1 - stride_order[axis]] = axis;
  }
  return order;
}

std::vector<int64_t> stride_order_from_allocation_order(
    const std::vector<int64_t>& allocation_order) {
  NVFUSE_ASSERT(is_permutation(allocation_order), "not a permutation");
  const int64_t rank = static_cast<int64_t>(allocation_order.size());
  std::vector<int64_t> stride_order(rank);
  for (int64_t position = 0; position < rank; ++position) {
    stride_order[allocation_order[position]] = rank - 1 - position;
  }
  return stride_order;
}

}  // namespace nvfuse
