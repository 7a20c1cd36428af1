#include "runtime/reduction_executor.h"

#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>

#include <algorithm>

#include "ir/allocation_strides.h"
#include "ir/dump.h"
#include "runtime/kernel_launch.h"
#include "runtime/output_allocation.h"

namespace nvfuse {

std::unique_ptr<ReductionExecutor> ReductionExecutor::try_create(
    const Fusion& fusion,
    std::string* why_not) {
  auto analysis = analyze_reduction(fusion, why_not);
  if (!analysis.has_value()) {
    return nullptr;
  }
  return std::unique_ptr<ReductionExecutor>(
      new ReductionExecutor(fusion, std::move(*analysis)));
}

ReductionExecutor::ReductionExecutor(const Fusion& fusion, ReductionAnalysis analysis)
    : fusion_(fusion), analysis_(std::move(analysis)) {
  for (size_t i = 0; i < fusion_.inputs().size(); ++i) {
    input_positions_.emplace(fusion_.inputs()[i], i);
  }
  const auto& written = analysis_.outputs;
  for (const Val* out : fusion_.outputs()) {
    auto it = std::find(written.begin(), written.end(), out);
    output_slots_.push_back(
        it == written.end()
            ? -1
            : static_cast<int>(analysis_.inputs.size() + (it - written.begin())));
  }
}

ReductionExecutor::Variant& ReductionExecutor::variant_for(
    const ReductionParams& params) {
  for (const auto& variant : variants_) {
    if (variant->params == params) {
      return *variant;
    }
  }
  auto variant = std::make_unique<Variant>(
      Variant{params, generate_reduction_kernel(fusion_, analysis_, params)});
  if (dump_enabled(DumpOption::params)) {
    dump("params", params.to_string() + "\n");
  }
  if (dump_enabled(DumpOption::cuda_kernel)) {
    dump("cuda_kernel", variant->source.code);
  }
  variants_.push_back(std::move(variant));
  return *variants_.back();
}

std::optional<ReductionSchedule> ReductionExecutor::schedule(
    const std::vector<Argument>& args,
    BoundInputs& bound,
    const std::vector<TensorArg>& outputs) const {
  auto reference = output_sizes_of({analysis_.reference}, bound);
  if (!reference.has_value()) {
    return std::nullopt;
  }
  std::vector<TensorArg> inputs;
  for (const TensorView* tv : analysis_.inputs) {
    inputs.push_back(tensor_arg_of(std::get<at::Tensor>(argument_of(args, tv))));
  }
  return schedule_reduction(
      analysis_, reference->front(), inputs, outputs, device_info_of(bound.device));
}

std::string ReductionExecutor::cuda_code_for(
    const std::vector<Argument>& args,
    BoundInputs& bound) {
  auto sizes = output_sizes_of(analysis_.outputs, bound);
  NVFUSE_CHECK_AS(
      ErrorKind::kUnsupported, sizes.has_value(),
      "the output sizes of this fusion are not known before running it");
  std::vector<TensorArg> outputs;
  for (size_t i = 0; i < analysis_.outputs.size(); ++i) {
    const TensorView* tv = analysis_.outputs[i];
    // The caching allocator returns blocks aligned far beyond 16 bytes.
    outputs.push_back({tv->dtype(), (*sizes)[i],
                       strides_for_allocation(*tv, (*sizes)[i]), 0});
  }
  auto planned = schedule(args, bound, outputs);
  NVFUSE_CHECK_AS(
      ErrorKind::kUnsupported, planned.has_value(),
      "these inputs run on the reference evaluator: their reduced axes are not "
      "one strided axis in every tensor");
  std::lock_guard<std::mutex> lock(mutex_);
  return variant_for(planned->params).source.code;
}

std::string ReductionExecutor::last_cuda_code() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_ == nullptr ? std::string() : last_->source.code;
}

cuda_driver::FunctionResources ReductionExecutor::last_resources() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_kernel_ == nullptr ? cuda_driver::FunctionResources{}
                                 : last_kernel_->resources;
}

std::optional<std::vector<at::Tensor>> ReductionExecutor::run(
    const std::vector<Argument>& args,
    BoundInputs& bound) {
  auto sizes = output_sizes_of(analysis_.outputs, bound);
  if (!sizes.has_value()) {
    return std::nullopt;
  }
  const c10::Device device = bound.device;
  const c10::DeviceGuard guard(device);
  std::vector<at::Tensor> tensors;
  for (const TensorView* tv : analysis_.inputs) {
    tensors.push_back(std::get<at::Tensor>(argument_of(args, tv)));
  }
  std::vector<TensorArg> outputs;
  for (size_t i = 0; i < analysis_.outputs.size(); ++i) {
    at::Tensor out = allocate_output(
        *analysis_.outputs[i], (*sizes)[i], at::TensorOptions().device(device));
    if (poison_outputs()) {
      poison(out);
    }
    tensors.push_back(out);
    outputs.push_back(tensor_arg_of(out));
  }
  const auto planned = schedule(args, bound, outputs);
  if (!planned.has_value()) {
    return std::nullopt;
  }
  if (planned->grid_x > 0) {
    const LoadedKernel* kernel = nullptr;
    const Variant* variant = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      Variant& v = variant_for(planned->params);
      const LoadedKernel*& loaded = v.loaded[device.index()];
      if (loaded == nullptr) {
        loaded = &load_kernel(v.source.code, v.source.name, device.index());
      }
      kernel = loaded;
      variant = &v;
      last_ = variant;
      last_kernel_ = kernel;
    }
    LaunchValues launch;
    for (const at::Tensor& t : tensors) {
      launch.pointers.push_back(t.data_ptr());
    }
    launch.values = value_input_values(
        fusion_, analysis_.value_inputs, args,
        [&](const Val* v) -> const Argument& { return argument_of(args, v); });
    launch.numel = planned->space.rows;
    launch.width = planned->space.width;
    launch.extents = planned->space.row_extents;
    launch.strides = planned->space.row_strides;
    launch.col_strides = planned->space.col_strides;
    at::Tensor workspace;
    at::Tensor semaphores;
    if (planned->params.split) {
      const auto options = at::TensorOptions().device(device);
      workspace = at::empty({planned->workspace_bytes}, options.dtype(at::kByte));
      semaphores = at::zeros({planned->grid_x}, options.dtype(at::kInt));
      launch.workspace = workspace.data_ptr();
      launch.semaphores = semaphores.data_ptr();
    }
    std::vector<uint64_t> packed = pack_args(variant->source.layout, launch);
    launch_on_current_stream(
        *kernel, device,
        {static_cast<unsigned>(planned->grid_x), static_cast<unsigned>(planned->grid_y)},
        {static_cast<unsigned>(planned->params.block_size)}, packed,
        "rows=" + std::to_string(planned->space.rows) +
            " width=" + std::to_string(planned->space.width) + " " +
            planned->params.to_string());
  }
  std::vector<at::Tensor> values;
  for (size_t i = 0; i < fusion_.outputs().size(); ++i) {
    const int slot = output_slots_[i];
    values.push_back(
        slot >= 0 ? tensors[slot]
                  : std::get<at::Tensor>(argument_of(args, fusion_.outputs()[i])));
  }
  return values;
}

}  // namespace nvfuse
