#include "runtime/small_output_blocks.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>

#include "runtime/output_allocation.h"
#include "runtime/stream_capture.h"

namespace nvfuse {

namespace {

thread_local SmallOutputBlocks* innermost = nullptr;

int64_t round_up(int64_t bytes, int64_t multiple) {
  return (bytes + multiple - 1) / multiple * multiple;
}

// The bytes from a tensor's first element to just past its last (dense or
// not), or 0 when it has no element.
int64_t span_bytes(at::IntArrayRef sizes, at::IntArrayRef strides, at::ScalarType dtype) {
  int64_t last = 0;
  for (size_t axis = 0; axis < sizes.size(); ++axis) {
    if (sizes[axis] == 0) {
      return 0;
    }
    last += (sizes[axis] - 1) * strides[axis];
  }
  return (last + 1) * static_cast<int64_t>(c10::elementSize(dtype));
}

std::atomic<bool>& sharing_setting() {
  static std::atomic<bool> on = [] {
    const char* env = std::getenv("NVFUSE_SHARED_SMALL_OUTPUTS");
    return env == nullptr || std::string(env) != "0";
  }();
  return on;
}

}  // namespace

SmallOutputBlocks::SmallOutputBlocks(int64_t first_block_bytes)
    : first_block_bytes_(first_block_bytes), outer_(innermost) {
  innermost = this;
}

SmallOutputBlocks::~SmallOutputBlocks() { innermost = outer_; }

SmallOutputBlocks* current_small_output_blocks() { return innermost; }

void set_shared_small_outputs(bool on) { sharing_setting() = on; }

bool shared_small_outputs() { return sharing_setting(); }

std::optional<at::Tensor> SmallOutputBlocks::carve(
    at::IntArrayRef sizes, at::IntArrayRef strides, at::ScalarType dtype, c10::Device device) {
  const int64_t bytes = span_bytes(sizes, strides, dtype);
  if (!device.is_cuda() || bytes == 0 || bytes > kLargestShared) {
    return std::nullopt;
  }
  const int64_t aligned = round_up(bytes, kAlignment);
  if (!block_.defined() || block_.device() != device || used_ + aligned > block_.numel()) {
    if (current_stream_is_capturing(device)) {
      return std::nullopt;
    }
    // The rest of what the call is expected to carve, or one largest
    // tensor's worth; 512 bytes is the allocator's own rounding.
    const int64_t size = round_up(std::max(first_block_bytes_ - carved_, kLargestShared), 512);
    block_ = empty_strided_on({size}, {1}, at::kByte, device);
    used_ = 0;
  }
  at::Tensor tensor = at::detail::make_tensor<c10::TensorImpl>(c10::Storage(block_.storage()),
      c10::DispatchKeySet(c10::DispatchKey::CUDA), c10::scalarTypeToTypeMeta(dtype));
  const auto item = static_cast<int64_t>(c10::elementSize(dtype));
  tensor.unsafeGetTensorImpl()->set_sizes_and_strides(sizes, strides, used_ / item);
  used_ += aligned;
  carved_ += aligned;
  return tensor;
}

}  // namespace nvfuse
