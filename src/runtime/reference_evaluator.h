// Executes a fusion op by op with ATen. The embedded executor for CPU
// tensors, the oracle that GPU kernels are tested against, and (later) the
// executor of ATen segments.
#pragma once

#include <ATen/core/Tensor.h>

#include <unordered_map>
#include <vector>

#include "ir/all_exprs.h"
#include "ir/fusion.h"
#include "runtime/aten_types.h"

namespace nvfuse {

class ReferenceEvaluator {
 public:
  // `device`: where tensors created from scalars (full, iota, random) go:
  // the device the fusion runs on.
  explicit ReferenceEvaluator(const Fusion& fusion, c10::Device device = c10::Device(c10::kCPU))
      : fusion_(fusion), device_(device) {}

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
  // Shape, indexing, creation and matmul ops: reference_tensor_ops.cpp.
  void handle(const ReshapeOp& e);
  void handle(const PermuteOp& e);
  void handle(const SqueezeOp& e);
  void handle(const SliceOp& e);
  void handle(const PadOp& e);
  void handle(const CatOp& e);
  void handle(const SelectOp& e);
  void handle(const IndexSelectOp& e);
  void handle(const GatherOp& e);
  void handle(const ScatterOp& e);
  void handle(const IndexPutAccumulateOp& e);
  void handle(const EmbeddingFwdOp& e);
  void handle(const TriuOp& e);
  void handle(const CumsumOp& e);
  void handle(const FullOp& e);
  void handle(const IotaOp& e);
  void handle(const RngOp& e);
  void handle(const MatmulOp& e);
  void handle(const LinearOp& e);
  void handle(const GroupedMmOp& e);
  // Flash attention: reference_attention.cpp.
  void handle(const SdpaFwdOp& e);
  void handle(const SdpaBwdOp& e);
  void handle(const TopkOp& e);
  void handle(const ArgsortOp& e);
  void handle(const Split& e);
  void handle(const Merge& e);
  at::Tensor tensor_of(const Val* v) const;
  at::Device device_of_tensor_operands(const Expr& e) const;
  ScalarValue scalar_of(const Val* v) const;
  std::vector<int64_t> int_values(const Expr& e, size_t first, size_t count) const;
  at::TensorOptions options_for(const Val* out) const;

  const Fusion& fusion_;
  std::unordered_map<const Val*, at::Tensor> tensors_;
  std::unordered_map<const Val*, ScalarValue> scalars_;
  c10::Device device_;
};

// Whether sdpfa_fwd and sdpfa_bwd without dropout run cuDNN's attention
// where it takes the inputs (on by default: on Hopper what torch's
// scaled_dot_product_attention picks, and faster than the flash kernel),
// or always torch's flash kernels, whose results code written for nvFuser
// compares against bit for bit (nvFuser ran them; as_nvfuser() turns
// cuDNN off).
void set_cudnn_attention(bool on);
bool cudnn_attention_on();

}  // namespace nvfuse
