// What the executors of generated kernels (pointwise, reduction,
// coordinate) share: the kernels they generated, one per params value, and
// from them the last one launched.
#pragma once

#include <string>
#include <utility>

#include "runtime/kernel_executor.h"
#include "runtime/kernel_variants.h"

namespace nvfuse {

template <typename Params>
class GeneratedKernelExecutor : public KernelExecutor {
 public:
  std::string last_cuda_code() const override { return variants_.last_code(); }
  cuda_driver::FunctionResources last_resources() const override {
    return variants_.last_resources();
  }

 protected:
  explicit GeneratedKernelExecutor(typename KernelVariants<Params>::Generate generate)
      : variants_(std::move(generate)) {}

  KernelVariants<Params> variants_;
};

}  // namespace nvfuse
