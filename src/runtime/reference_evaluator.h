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

  // Only the scalar arithmetic of the fusion (what a generated kernel takes
  // by value); returns the value of `scalar` after binding `args`.
  void run_scalars(const std::vector<Argument>& args);
  ScalarValue scalar_value(const Val* scalar) const { return scalar_of(scalar); }

 private:
  void bind(const std::vector<Argument>& args);
  void evaluate(const Expr& expr);
  // One per Expr kind (dispatch() calls the overload).
  void handle(const PointwiseOp& e);
  void handle_scalar_pointwise(const PointwiseOp& e);
  void handle(const CastOp& e);
  void handle(const BroadcastOp& e);
  void handle(const ExpandOp& e);
  void handle(const ReductionOp& e);
  void handle(const VarMeanOp& e);
  void handle(const Split& e);
  void handle(const Merge& e);
  at::Tensor tensor_of(const Val* v) const;
  ScalarValue scalar_of(const Val* v) const;

  const Fusion& fusion_;
  std::unordered_map<const Val*, at::Tensor> tensors_;
  std::unordered_map<const Val*, ScalarValue> scalars_;
};

}  // namespace nvfuse
