#include "runtime/split_semaphores.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "runtime/stream_capture.h"

namespace nvfuse {

at::Tensor split_workspace_for_launch(c10::Device device, int64_t bytes) {
  static StreamBuffers workspaces;
  // Past this size the buffer would hold memory the caching allocator
  // could give to others between launches: a fresh one per launch.
  constexpr int64_t kLargestKeptBytes = int64_t{16} << 20;
  return workspaces.for_launch(device, bytes, at::kByte, /*zeroed=*/false, kLargestKeptBytes);
}

at::Tensor StreamBuffers::for_launch(
    c10::Device device, int64_t count, at::ScalarType dtype, bool zeroed, int64_t largest_kept) {
  const c10::Stream stream =
      c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->getStream(device);
  const auto options = at::TensorOptions().device(device).dtype(dtype);
  const auto fresh = [&] {
    return zeroed ? at::zeros({count}, options) : at::empty({count}, options);
  };
  if (count > largest_kept || current_stream_is_capturing(device)) {
    return fresh();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  at::Tensor& buffer = buffers_[{device.index(), stream.id()}];
  if (!buffer.defined() || buffer.numel() < count) {
    // The old buffer goes back to the caching allocator, which hands it out
    // again only after this stream's earlier work.
    buffer = at::Tensor();
    buffer = fresh();
  }
  return buffer;
}

}  // namespace nvfuse
