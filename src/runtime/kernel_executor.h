// The interface of executors that run a whole fusion as one generated kernel
// (pointwise, reduction): the fusion executor picks one and falls back to
// the ATen reference evaluator when it declines a call.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <string>
#include <vector>

#include "runtime/aten_types.h"
#include "runtime/cuda/cuda_driver.h"
#include "runtime/input_binding.h"

namespace nvfuse {

class KernelExecutor {
 public:
  virtual ~KernelExecutor() = default;

  // The value of each fusion output (in output order; outputs that are
  // inputs are the input tensors), or nullopt when this call cannot run as
  // a kernel (the caller then uses the reference evaluator).
  virtual std::optional<std::vector<at::Tensor>> run(
      const std::vector<Argument>& args, BoundInputs& bound) = 0;

  // The source of the kernel for these inputs, without running it.
  virtual std::string cuda_code_for(const std::vector<Argument>& args, BoundInputs& bound) = 0;
  // The source of the kernel the last run launched (empty before one), and
  // its registers and local memory (spills) as the driver reports them.
  virtual std::string last_cuda_code() const = 0;
  virtual cuda_driver::FunctionResources last_resources() const = 0;
};

}  // namespace nvfuse
