#include "runtime/fusion_executor.h"

#include "ir/dump.h"
#include "passes/pass_list.h"
#include "runtime/input_binding.h"
#include "runtime/output_allocation.h"
#include "runtime/pointwise_executor.h"
#include "runtime/reduction_executor.h"
#include "schedule/reduction_analysis.h"
#include "runtime/reference_evaluator.h"

namespace nvfuse {

FusionExecutor::FusionExecutor(const Fusion& definition)
    : fusion_(definition.clone()) {
  if (dump_enabled(DumpOption::fusion_ir)) {
    dump("fusion_ir", definition.to_string());
  }
  run_presegmentation_passes(*fusion_);
  std::string kind;
  if (has_reduction(*fusion_)) {
    kernel_ = ReductionExecutor::try_create(*fusion_, &why_no_kernel_);
    kind = "reduction";
  } else {
    kernel_ = PointwiseExecutor::try_create(*fusion_, &why_no_kernel_);
    kind = "pointwise";
  }
  if (dump_enabled(DumpOption::segments)) {
    dump("segments",
         kernel_ != nullptr
             ? "1 segment: a generated " + kind + " kernel (on CUDA inputs)\n"
             : "1 segment: the ATen reference evaluator (the " + kind +
                 " scheduler rejects the fusion: " + why_no_kernel_ + ")\n");
  }
}

std::string FusionExecutor::cuda_code_for(const std::vector<Argument>& args) {
  BoundInputs bound = bind_inputs(*fusion_, args);
  NVFUSE_CHECK_AS(
      ErrorKind::kUnsupported, kernel_ != nullptr,
      "this fusion runs on the ATen reference evaluator, not a generated "
      "kernel: the schedulers reject it (", why_no_kernel_, ")");
  return kernel_->cuda_code_for(args, bound);
}

std::string FusionExecutor::last_cuda_code() const {
  return kernel_ != nullptr ? kernel_->last_cuda_code() : std::string();
}

cuda_driver::FunctionResources FusionExecutor::last_resources() const {
  return kernel_ != nullptr ? kernel_->last_resources()
                            : cuda_driver::FunctionResources{};
}

std::vector<at::Tensor> FusionExecutor::execute(
    const std::vector<Argument>& args) {
  BoundInputs bound = bind_inputs(*fusion_, args);
  std::optional<std::vector<at::Tensor>> kernel_values;
  if (bound.device.is_cuda() && kernel_ != nullptr) {
    kernel_values = kernel_->run(args, bound);
  }
  // A kernel wrote fresh tensors laid out by their allocation domains; the
  // reference evaluator's values may be views of inputs or laid out by ATen.
  const bool from_kernel = kernel_values.has_value();
  std::vector<at::Tensor> values = from_kernel
      ? std::move(*kernel_values)
      : ReferenceEvaluator(*fusion_).run(args);
  std::vector<at::Tensor> input_tensors;
  if (!from_kernel) {
    for (const Argument& arg : args) {
      if (const auto* t = std::get_if<at::Tensor>(&arg)) {
        input_tensors.push_back(*t);
      }
    }
  }

  std::vector<at::Tensor> outputs;
  const auto& fusion_outputs = fusion_->outputs();
  for (size_t i = 0; i < fusion_outputs.size(); ++i) {
    const auto& tv = *fusion_outputs[i]->as<TensorView>();
    if (TensorView* target = fusion_->aliased_input(&tv)) {
      const auto& inputs = fusion_->inputs();
      const size_t index =
          std::find(inputs.begin(), inputs.end(), target) - inputs.begin();
      at::Tensor destination = std::get<at::Tensor>(args[index]);
      NVFUSE_INPUT_CHECK(
          destination.sizes() == values[i].sizes(), "input ", index,
          " is updated in place by an output of shape ", values[i].sizes(),
          " but has shape ", destination.sizes());
      destination.copy_(values[i]);
      continue;
    }
    if (fusion_->is_input(&tv) || from_kernel) {
      outputs.push_back(values[i]);  // an input returned as is, or final
      continue;
    }
    outputs.push_back(
        materialize_output(tv, values[i], input_tensors, bound.device));
  }
  return outputs;
}

FusionExecutor& executor_for(CachedFusion& entry) {
  std::lock_guard<std::mutex> lock(entry.mutex);
  if (entry.runtime_state == nullptr) {
    entry.runtime_state = std::make_unique<FusionExecutor>(*entry.fusion);
  }
  return static_cast<FusionExecutor&>(*entry.runtime_state);
}

std::vector<at::Tensor> execute_cached_fusion(
    int64_t fusion_id,
    const std::vector<Argument>& args) {
  CachedFusion& entry = FusionCache::get().at(fusion_id);
  try {
    return executor_for(entry).execute(args);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kInternal) {
      throw;
    }
    throw Error(
        e.kind(),
        std::string(e.what()) + "\nRepro script:\n" + entry.repro_script());
  }
}

}  // namespace nvfuse
