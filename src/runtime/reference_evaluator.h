// Executes a fusion op by op with ATen. The embedded executor for CPU
// tensors, the oracle that GPU kernels are tested against, and (later) the
// executor of ATen segments.
#pragma once

#include <ATen/core/Tensor.h>

#include <unordered_map>
#include <vector>

#include "ir/fusion.h"
#include "runtime/aten_types.h"

namespace nvfuse {

class ReferenceEvaluator {
 public:
  explicit ReferenceEvaluator(const Fusion& fusion) : fusion_(fusion) {}

  // The value of every fusion output, in logical shape, computed from `args`
  // (bound to the fusion inputs in order; already validated). Half, BFloat16
  // and Float8 math is done in Float and rounded once per op, as torch's
  // CUDA kernels do.
  std::vector<at::Tensor> run(const std::vector<Argument>& args);

 private:
  void evaluate(const Expr& expr);
  at::Tensor tensor_of(const Val* v) const;
  ScalarValue scalar_of(const Val* v) const;

  const Fusion& fusion_;
  std::unordered_map<const Val*, at::Tensor> tensors_;
  std::unordered_map<const Val*, ScalarValue> scalars_;
};

}  // namespace nvfuse
