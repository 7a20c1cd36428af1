#include "runtime/fusion_executor.h"

#include "ir/dump.h"
#include "passes/pass_list.h"
#include "runtime/input_binding.h"
#include "runtime/output_allocation.h"
#include "runtime/reference_evaluator.h"

namespace nvfuse {

FusionExecutor::FusionExecutor(const Fusion& definition)
    : fusion_(definition.clone()) {
  if (dump_enabled(DumpOption::fusion_ir)) {
    dump("fusion_ir", definition.to_string());
  }
  run_presegmentation_passes(*fusion_);
}

std::vector<at::Tensor> FusionExecutor::execute(
    const std::vector<Argument>& args) {
  const BoundInputs bound = bind_inputs(*fusion_, args);
  std::vector<at::Tensor> input_tensors;
  for (const Argument& arg : args) {
    if (const auto* t = std::get_if<at::Tensor>(&arg)) {
      input_tensors.push_back(*t);
    }
  }
  std::vector<at::Tensor> values = ReferenceEvaluator(*fusion_).run(args);

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
    if (fusion_->is_input(&tv)) {
      outputs.push_back(values[i]);  // an input returned as is
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
