#include "runtime/output_allocation.h"

#include <ATen/ATen.h>

#include <numeric>

#include "ir/errors.h"
#include "runtime/aten_types.h"

namespace nvfuse {

std::vector<int64_t> strides_for_allocation(
    const TensorView& tv,
    at::IntArrayRef logical_sizes) {
  const int64_t rank = tv.rank();
  NVFUSE_ASSERT_EQ(
      static_cast<int64_t>(logical_sizes.size()), rank, "output rank");
  std::vector<int64_t> order(rank);
  std::iota(order.begin(), order.end(), 0);
  if (auto permutation = tv.domain().allocation_permutation()) {
    order = *permutation;
  } else {
    NVFUSE_UNSUPPORTED(
        "outputs whose allocation domain is not a permutation of the logical "
        "domain (", tv.name(), ")");
  }
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = 1;
  for (int64_t position = rank - 1; position >= 0; --position) {
    const int64_t axis = order[position];
    const IterDomain* id = tv.logical()[axis];
    if (id->is_expanded()) {
      strides[axis] = 0;  // expanded broadcasts occupy no memory
      continue;
    }
    strides[axis] = stride;
    stride *= std::max<int64_t>(logical_sizes[axis], 1);
  }
  return strides;
}

at::Tensor allocate_output(
    const TensorView& tv,
    at::IntArrayRef logical_sizes,
    const at::TensorOptions& options) {
  // Expanded axes are allocated with size 1, then expanded (stride 0).
  std::vector<int64_t> compact_sizes(logical_sizes.begin(), logical_sizes.end());
  for (int64_t axis = 0; axis < tv.rank(); ++axis) {
    if (tv.logical()[axis]->is_expanded()) {
      compact_sizes[axis] = 1;
    }
  }
  at::Tensor compact = at::empty_strided(
      compact_sizes, strides_for_allocation(tv, logical_sizes),
      options.dtype(to_aten(tv.dtype())));
  return compact.expand(logical_sizes);
}

namespace {

bool same_layout(
    const at::Tensor& t,
    const std::vector<int64_t>& strides) {
  for (int64_t axis = 0; axis < t.dim(); ++axis) {
    if (t.size(axis) > 1 && t.stride(axis) != strides[axis]) {
      return false;
    }
  }
  return true;
}

bool shares_memory(const at::Tensor& t, const std::vector<at::Tensor>& others) {
  for (const at::Tensor& other : others) {
    if (other.defined() && t.is_alias_of(other)) {
      return true;
    }
  }
  return false;
}

}  // namespace

at::Tensor materialize_output(
    const TensorView& tv,
    const at::Tensor& value,
    const std::vector<at::Tensor>& inputs,
    c10::Device device) {
  const std::vector<int64_t> strides =
      strides_for_allocation(tv, value.sizes());
  if (value.device() == device && same_layout(value, strides) &&
      !shares_memory(value, inputs)) {
    return value;
  }
  at::Tensor out = allocate_output(
      tv, value.sizes(), at::TensorOptions().device(device));
  // Write one slice of each expanded axis: its elements share memory.
  at::Tensor target = out;
  at::Tensor source = value;
  for (int64_t axis = 0; axis < tv.rank(); ++axis) {
    if (tv.logical()[axis]->is_expanded() && out.size(axis) > 0) {
      target = target.narrow(axis, 0, 1);
      source = source.narrow(axis, 0, 1);
    }
  }
  target.copy_(source);
  return out;
}

}  // namespace nvfuse
