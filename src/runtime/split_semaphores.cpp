#include "runtime/split_semaphores.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "runtime/cuda/cuda_driver.h"

namespace nvfuse {

at::Tensor split_workspace_for_launch(c10::Device device, int64_t bytes) {
  const c10::Stream stream =
      c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->getStream(device);
  const auto options = at::TensorOptions().device(device).dtype(at::kByte);
  // Past this size the buffer would hold memory the caching allocator
  // could give to others between launches: a fresh one per launch.
  constexpr int64_t kLargestKeptBytes = int64_t{16} << 20;
  if (bytes > kLargestKeptBytes || cuda_driver::is_capturing(stream.native_handle())) {
    return at::empty({bytes}, options);
  }
  static std::mutex mutex;
  static std::map<std::pair<int, int64_t>, at::Tensor> buffers;  // (device, stream id)
  std::lock_guard<std::mutex> lock(mutex);
  at::Tensor& buffer = buffers[{device.index(), stream.id()}];
  if (!buffer.defined() || buffer.numel() < bytes) {
    // The old buffer goes back to the caching allocator, which hands it out
    // again only after this stream's earlier work.
    buffer = at::Tensor();
    buffer = at::empty({bytes}, options);
  }
  return buffer;
}

at::Tensor SplitSemaphores::for_launch(c10::Device device, int64_t count) {
  const c10::Stream stream =
      c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->getStream(device);
  const auto options = at::TensorOptions().device(device).dtype(at::kInt);
  if (cuda_driver::is_capturing(stream.native_handle())) {
    return at::zeros({count}, options);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  at::Tensor& buffer = buffers_[{device.index(), stream.id()}];
  if (!buffer.defined() || buffer.numel() < count) {
    // The old buffer, if any, goes back to the caching allocator, which
    // hands it out again only after this stream's earlier work.
    buffer = at::zeros({count}, options);
  }
  return buffer;
}

}  // namespace nvfuse
