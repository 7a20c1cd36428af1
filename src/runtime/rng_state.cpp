#include "runtime/rng_state.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/core/Generator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <mutex>

#include "ir/errors.h"
#include "runtime/stream_capture.h"

// at::CUDAGeneratorImpl::philox_cuda_state, bound at load time where
// torch's CUDA library is loaded (libtorch.so needs it in every CUDA build
// of torch). nvfuse links no CUDA library of torch, so that it builds and
// runs against a CPU-only torch too: the reference is weak, and null there
// (random ops then refuse a capture). The member function is called as a
// free one taking `this` first, which the Itanium C++ ABI passes alike.
at::PhiloxCudaState nvfuse_torch_philox_cuda_state(at::CUDAGeneratorImpl* generator,
    uint64_t increment) __asm__("_ZN2at17CUDAGeneratorImpl17philox_cuda_stateEm")
    __attribute__((weak));

namespace nvfuse {

namespace {

// A seed and offset passed by value: a CUDA graph would replay the same
// random values every time.
void check_not_capturing(c10::Device device) {
  NVFUSE_CHECK_AS(ErrorKind::kUnsupported, !current_stream_is_capturing(device),
      "random ops in a CUDA graph: these pass the generator's seed and offset by "
      "value (the reference path, or a torch without its CUDA generator), so every "
      "replay would draw the same values; run this fusion outside the capture (or "
      "without cuda_graph=True)");
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

// The CUDA generator's (seed, offset) for one random op, advanced by 4: by
// value, or inside a capture the device pointers each replay sets.
at::PhiloxCudaState graph_safe_philox_state(c10::Device device) {
  if (nvfuse_torch_philox_cuda_state == nullptr) {
    check_not_capturing(device);
    const PhiloxState state = draw_philox_state(device);
    return at::PhiloxCudaState(state.seed, state.offset);
  }
  at::Generator generator = at::globalContext().defaultGenerator(device);
  std::lock_guard<std::mutex> lock(generator.mutex());
  auto* cuda_generator = static_cast<at::CUDAGeneratorImpl*>(generator.unsafeGetGeneratorImpl());
  try {
    return nvfuse_torch_philox_cuda_state(cuda_generator, 4);
  } catch (const c10::Error& error) {
    // A capture that torch's generator is not registered with (a raw stream
    // capture, not torch.cuda.graph or CUDAGraph.capture_begin).
    NVFUSE_CHECK_AS(ErrorKind::kUnsupported, false,
        "random ops in a CUDA graph capture need torch's generator registered with it "
        "(capture with torch.cuda.graph or torch.cuda.CUDAGraph): ",
        error.what_without_backtrace());
    throw;  // unreachable
  }
}

}  // namespace

PhiloxState next_philox_state(c10::Device device) {
  if (device.is_cuda()) {
    check_not_capturing(device);
  }
  return draw_philox_state(device);
}

void append_drawn_seeds(LaunchValues& values, size_t drawn, c10::Device device) {
  for (size_t k = 0; k < drawn; ++k) {
    at::PhiloxCudaState state;
    if (device.is_cuda()) {
      state = graph_safe_philox_state(device);
    } else {
      const PhiloxState cpu = draw_philox_state(device);
      state = at::PhiloxCudaState(cpu.seed, cpu.offset);
    }
    if (state.captured_) {
      values.graph_rng[0] = state.seed_.ptr;
      values.graph_rng[1] = state.offset_.ptr;
      values.values.push_back(ScalarValue(int64_t{0}));
      values.values.push_back(ScalarValue(static_cast<int64_t>(state.offset_intragraph_)));
    } else {
      values.values.push_back(ScalarValue(static_cast<int64_t>(state.seed_.val)));
      values.values.push_back(ScalarValue(static_cast<int64_t>(state.offset_.val)));
    }
  }
}

void check_drawn_in_graph(const LaunchValues& values, bool kernel_reads_graph_state) {
  NVFUSE_ASSERT((values.graph_rng[0] != nullptr) == kernel_reads_graph_state,
      "the random ops' kernel and torch's generator disagree on whether the launch is "
      "recorded into a CUDA graph");
}

bool draws_in_graph(size_t drawn, c10::Device device) {
  return drawn > 0 && device.is_cuda() && current_stream_is_capturing(device);
}

}  // namespace nvfuse
