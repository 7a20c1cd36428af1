#include "runtime/rng_state.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/core/Generator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <mutex>

#include "ir/errors.h"
#include "runtime/cuda/cuda_driver.h"

namespace nvfuse {

namespace {

// The seed and offset reach the kernel by value: a CUDA graph would replay
// the same random values every time.
void check_not_capturing(c10::Device device) {
  const c10::Stream stream =
      c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->getStream(device);
  NVFUSE_CHECK_AS(ErrorKind::kUnsupported, !cuda_driver::is_capturing(stream.native_handle()),
      "random ops in a CUDA graph: nvfuse passes the generator's seed and offset to "
      "the kernel by value, so every replay would draw the same values; run this "
      "fusion outside the capture (or without cuda_graph=True)");
}

PhiloxState draw_philox_state(c10::Device device) {
  if (device.is_cuda()) {
    at::Generator generator = at::globalContext().defaultGenerator(device);
    std::lock_guard<std::mutex> lock(generator.mutex());
    PhiloxState state{generator.current_seed(), generator.get_offset()};
    generator.set_offset(state.offset + 4);
    return state;
  }
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  return {at::check_generator<at::CPUGeneratorImpl>(generator)->random64(), 0};
}

}  // namespace

PhiloxState next_philox_state(c10::Device device) {
  if (device.is_cuda()) {
    check_not_capturing(device);
  }
  return draw_philox_state(device);
}

void append_drawn_seeds(std::vector<ScalarValue>& values, size_t drawn, c10::Device device) {
  if (drawn > 0 && device.is_cuda()) {
    check_not_capturing(device);  // once per launch, not per random op
  }
  for (size_t k = 0; k < drawn; ++k) {
    const PhiloxState state = draw_philox_state(device);
    values.push_back(ScalarValue(static_cast<int64_t>(state.seed)));
    values.push_back(ScalarValue(static_cast<int64_t>(state.offset)));
  }
}

}  // namespace nvfuse
