#include "runtime/stream_capture.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "runtime/cuda/cuda_driver.h"

namespace nvfuse {

bool current_stream_is_capturing(c10::Device device) {
  cuda_driver::make_context_current(device.index());
  const c10::Stream stream =
      c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->getStream(device);
  return cuda_driver::is_capturing(stream.native_handle());
}

}  // namespace nvfuse
