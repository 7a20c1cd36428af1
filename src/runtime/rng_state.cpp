#include "runtime/rng_state.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/core/Generator.h>

#include <mutex>

namespace nvfuse {

PhiloxState next_philox_state(c10::Device device) {
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

}  // namespace nvfuse
