#include "runtime/kernel_io.h"

#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>

#include <algorithm>

#include "ir/allocation_strides.h"
#include "runtime/host_timing.h"
#include "runtime/kernel_launch.h"
#include "runtime/output_allocation.h"
#include "runtime/reference_evaluator.h"

namespace nvfuse {

KernelIo::KernelIo(const Fusion& fusion, std::vector<const TensorView*> inputs,
    std::vector<const TensorView*> outputs)
    : fusion_(fusion), inputs_(std::move(inputs)), outputs_(std::move(outputs)) {
  for (size_t i = 0; i < fusion_.inputs().size(); ++i) {
    input_positions_.emplace(fusion_.inputs()[i], i);
  }
  for (const Val* out : fusion_.outputs()) {
    auto it = std::find(outputs_.begin(), outputs_.end(), out);
    output_slots_.push_back(it == outputs_.end()
            ? -1  // a fusion input, returned as is
            : static_cast<int>(inputs_.size() + (it - outputs_.begin())));
  }
}

std::vector<TensorArg> KernelIo::input_args(const std::vector<Argument>& args) const {
  std::vector<TensorArg> result;
  for (const TensorView* tv : inputs_) {
    result.push_back(tensor_arg_of(std::get<at::Tensor>(argument_of(args, tv))));
  }
  return result;
}

std::vector<TensorArg> KernelIo::planned_output_args(BoundInputs& bound) const {
  auto sizes = output_sizes_of(outputs_, bound);
  NVFUSE_CHECK_AS(ErrorKind::kUnsupported, sizes.has_value(),
      "the output sizes of this fusion are not known before running it");
  std::vector<TensorArg> result;
  for (size_t i = 0; i < outputs_.size(); ++i) {
    // The caching allocator returns blocks aligned far beyond 16 bytes.
    result.push_back(
        {outputs_[i]->dtype(), (*sizes)[i], strides_for_allocation(*outputs_[i], (*sizes)[i]), 0});
  }
  return result;
}

std::optional<std::vector<at::Tensor>> KernelIo::launch_tensors(
    const std::vector<Argument>& args, BoundInputs& bound) const {
  std::optional<HostStepTimer> step("06a output sizes");
  auto sizes = output_sizes_of(outputs_, bound);
  step.reset();
  if (!sizes.has_value()) {
    return std::nullopt;
  }
  std::vector<at::Tensor> tensors;
  for (const TensorView* tv : inputs_) {
    tensors.push_back(std::get<at::Tensor>(argument_of(args, tv)));
  }
  for (size_t i = 0; i < outputs_.size(); ++i) {
    if (!writes_in_place_.empty() && writes_in_place_[i]) {
      if (auto target = in_place_target(i, (*sizes)[i], args, bound.device)) {
        tensors.push_back(std::move(*target));
        continue;
      }
    }
    step.emplace("06c one output's allocation");
    at::Tensor out =
        allocate_output(*outputs_[i], (*sizes)[i], at::TensorOptions().device(bound.device));
    step.reset();
    if (poison_outputs()) {
      poison(out);
    }
    tensors.push_back(std::move(out));
  }
  return tensors;
}

std::optional<at::Tensor> KernelIo::in_place_target(size_t i, const std::vector<int64_t>& sizes,
    const std::vector<Argument>& args, c10::Device device) const {
  const TensorView* input = fusion_.aliased_input(outputs_[i]);
  if (input == nullptr || fusion_.is_output(input)) {
    return std::nullopt;
  }
  for (size_t j = 0; j < outputs_.size(); ++j) {
    if (j != i && fusion_.aliased_input(outputs_[j]) == input) {
      return std::nullopt;
    }
  }
  const at::Tensor& target = std::get<at::Tensor>(argument_of(args, input));
  if (target.device() != device || target.scalar_type() != to_aten(outputs_[i]->dtype()) ||
      target.sizes() != at::IntArrayRef(sizes) ||
      !laid_out_as(target, strides_for_allocation(*outputs_[i], sizes)) ||
      at::has_internal_overlap(target) != at::MemOverlap::No) {
    return std::nullopt;
  }
  // Another input in the same memory could be read by a thread after the
  // thread owning the element wrote it.
  // (By memory ranges: small outputs of one call share a storage but no
  // memory, small_output_blocks.h.)
  for (const TensorView* tv : inputs_) {
    if (tv != input &&
        at::get_overlap_status(std::get<at::Tensor>(argument_of(args, tv)), target) !=
            at::MemOverlapStatus::No) {
      return std::nullopt;
    }
  }
  return target;
}

std::vector<TensorArg> KernelIo::output_args(const std::vector<at::Tensor>& tensors) const {
  std::vector<TensorArg> result;
  for (size_t t = inputs_.size(); t < tensors.size(); ++t) {
    result.push_back(tensor_arg_of(tensors[t]));
  }
  return result;
}

std::vector<ScalarValue> KernelIo::values_of(const std::vector<const Val*>& value_inputs,
    const std::vector<Argument>& args, BoundInputs& bound) const {
  std::optional<ReferenceEvaluator> host;  // for what binding cannot compute
  std::vector<ScalarValue> values;
  for (const Val* v : value_inputs) {
    if (v->is<TensorView>()) {
      values.push_back(from_aten_scalar(std::get<at::Tensor>(argument_of(args, v)).item()));
    } else if (fusion_.is_input(v)) {
      values.push_back(std::get<ScalarValue>(argument_of(args, v)));
    } else if (auto value = bound.extents.evaluate(v->as<Scalar>())) {
      values.push_back(*value);  // shape arithmetic on bound sizes
    } else {
      if (!host.has_value()) {
        host.emplace(fusion_);
        host->run_scalars(args);
      }
      values.push_back(host->scalar_value(v));
    }
  }
  return values;
}

std::vector<at::Tensor> KernelIo::fusion_outputs(
    const std::vector<Argument>& args, const std::vector<at::Tensor>& tensors) const {
  std::vector<at::Tensor> values;
  for (size_t i = 0; i < output_slots_.size(); ++i) {
    const int slot = output_slots_[i];
    values.push_back(
        slot >= 0 ? tensors[slot] : std::get<at::Tensor>(argument_of(args, fusion_.outputs()[i])));
  }
  return values;
}

}  // namespace nvfuse
