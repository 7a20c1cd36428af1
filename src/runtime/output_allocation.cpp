#include "runtime/output_allocation.h"

#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/core/DeviceGuard.h>

#include <numeric>
#include <optional>

#include "ir/allocation_strides.h"
#include "ir/errors.h"
#include "runtime/aten_types.h"
#include "runtime/small_output_blocks.h"

namespace nvfuse {

at::Tensor empty_strided_on(
    at::IntArrayRef sizes, at::IntArrayRef strides, at::ScalarType dtype, c10::Device device) {
  if (!device.is_cuda()) {
    return at::empty_strided(sizes, strides, at::TensorOptions().dtype(dtype).device(device));
  }
  // The allocator torch.cuda allocates with, asked of torch's CUDA library
  // each time: a pluggable allocator put in the caching allocator's place
  // (torch.cuda.memory.change_current_allocator) is stored where only that
  // library reads it, not in c10's registry of allocators by device type.
  c10::Allocator* allocator = at::detail::getCUDAHooks().getCUDADeviceAllocator();
  // The allocator allocates on the current device.
  const c10::DeviceGuard guard(device);
  return at::detail::empty_strided_generic(
      sizes, strides, allocator, c10::DispatchKeySet(c10::DispatchKey::CUDA), dtype);
}

at::Tensor allocate_output(
    const TensorView& tv, at::IntArrayRef logical_sizes, const at::TensorOptions& options) {
  // Expanded axes are allocated with size 1, then expanded (stride 0).
  std::vector<int64_t> compact_sizes(logical_sizes.begin(), logical_sizes.end());
  bool expanded = false;
  for (int64_t axis = 0; axis < tv.rank(); ++axis) {
    if (tv.logical()[axis]->is_expanded()) {
      compact_sizes[axis] = 1;
      expanded = true;
    }
  }
  const std::vector<int64_t> strides = strides_for_allocation(tv, logical_sizes.vec());
  const at::ScalarType dtype = to_aten(tv.dtype());
  std::optional<at::Tensor> shared;
  if (SmallOutputBlocks* blocks = current_small_output_blocks()) {
    shared = blocks->carve(compact_sizes, strides, dtype, options.device());
  }
  at::Tensor compact = shared.has_value()
      ? *std::move(shared)
      : empty_strided_on(compact_sizes, strides, dtype, options.device());
  // An expand of nothing would still make a view (a new tensor per call).
  return expanded ? compact.expand(logical_sizes) : compact;
}

namespace {

bool shares_memory(const at::Tensor& t, const std::vector<at::Tensor>& others) {
  for (const at::Tensor& other : others) {
    if (other.defined() && t.is_alias_of(other)) {
      return true;
    }
  }
  return false;
}

}  // namespace

bool laid_out_as(const at::Tensor& t, const std::vector<int64_t>& strides) {
  for (int64_t axis = 0; axis < t.dim(); ++axis) {
    if (t.size(axis) > 1 && t.stride(axis) != strides[axis]) {
      return false;
    }
  }
  return true;
}

at::Tensor materialize_output(const TensorView& tv, const at::Tensor& value,
    const std::vector<at::Tensor>& inputs, c10::Device device) {
  const std::vector<int64_t> strides = strides_for_allocation(tv, value.sizes().vec());
  if (value.device() == device && laid_out_as(value, strides) && !shares_memory(value, inputs)) {
    return value;
  }
  at::Tensor out = allocate_output(tv, value.sizes(), at::TensorOptions().device(device));
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
