#include "runtime/kernel_pending.h"

#include <c10/core/Device.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "runtime/cuda/cuda_driver.h"
#include "runtime/compile_ahead.h"
#include "runtime/cuda/kernel_cache.h"

namespace nvfuse {

namespace {

thread_local bool kernel_pending = false;

}  // namespace

void note_kernel_pending() {
  kernel_pending = true;
  note_compiled_ahead();
}

bool take_kernel_pending() {
  const bool pending = kernel_pending;
  kernel_pending = false;
  return pending;
}

bool may_defer_compile(int device) {
  if (!tiered_compile() && !compiling_ahead()) {
    return false;
  }
  const c10::Stream stream = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)
                                 ->getStream(c10::Device(c10::DeviceType::CUDA, device));
  return !cuda_driver::is_capturing(stream.native_handle());
}

}  // namespace nvfuse
