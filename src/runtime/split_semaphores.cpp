#include "runtime/split_semaphores.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "runtime/cuda/cuda_driver.h"

namespace nvfuse {

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
