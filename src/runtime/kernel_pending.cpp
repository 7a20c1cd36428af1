#include "runtime/kernel_pending.h"

#include <c10/core/Device.h>
#include "runtime/compile_ahead.h"
#include "runtime/cuda/kernel_cache.h"
#include "runtime/stream_capture.h"

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
  return !current_stream_is_capturing(c10::Device(c10::DeviceType::CUDA, device));
}

}  // namespace nvfuse
