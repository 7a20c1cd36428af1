#include "runtime/pointwise_executor.h"

#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>

#include "ir/allocation_strides.h"
#include "ir/dump.h"
#include "runtime/kernel_launch.h"
#include "runtime/output_allocation.h"

namespace nvfuse {

namespace {

std::mutex tuning_mutex;
PointwiseTuning& tuning_storage() {
  static PointwiseTuning tuning;
  return tuning;
}

}  // namespace

void set_pointwise_tuning(const PointwiseTuning& tuning) {
  NVFUSE_CHECK(
      tuning.block_size > 0 && tuning.block_size <= 1024 &&
          tuning.block_size % 32 == 0,
      "block_size must be a multiple of 32 up to 1024");
  NVFUSE_CHECK(
      tuning.max_unroll >= 1 && tuning.elements_per_thread >= 1,
      "max_unroll and elements_per_thread must be at least 1");
  std::lock_guard<std::mutex> lock(tuning_mutex);
  tuning_storage() = tuning;
}

PointwiseTuning pointwise_tuning() {
  std::lock_guard<std::mutex> lock(tuning_mutex);
  return tuning_storage();
}

std::unique_ptr<PointwiseExecutor> PointwiseExecutor::try_create(
    const Fusion& fusion,
    std::string* why_not) {
  auto analysis = analyze_pointwise(fusion, why_not);
  if (!analysis.has_value()) {
    return nullptr;
  }
  return std::unique_ptr<PointwiseExecutor>(
      new PointwiseExecutor(fusion, std::move(*analysis)));
}

PointwiseExecutor::PointwiseExecutor(
    const Fusion& fusion,
    PointwiseAnalysis analysis)
    : fusion_(fusion), analysis_(std::move(analysis)) {
  for (size_t i = 0; i < fusion_.inputs().size(); ++i) {
    input_positions_.emplace(fusion_.inputs()[i], i);
  }
  const auto& written = analysis_.outputs;
  for (const Val* out : fusion_.outputs()) {
    auto it = std::find(written.begin(), written.end(), out);
    output_slots_.push_back(
        it == written.end()
            ? -1  // a fusion input, returned as is
            : static_cast<int>(analysis_.inputs.size() + (it - written.begin())));
  }
}

std::vector<TensorArg> PointwiseExecutor::input_args(
    const std::vector<Argument>& args) const {
  std::vector<TensorArg> inputs;
  for (const TensorView* tv : analysis_.inputs) {
    inputs.push_back(tensor_arg_of(std::get<at::Tensor>(argument_of(args, tv))));
  }
  return inputs;
}

PointwiseExecutor::Variant& PointwiseExecutor::variant_for(
    const PointwiseParams& params) {
  for (const auto& variant : variants_) {
    if (variant->params == params) {
      return *variant;
    }
  }
  auto variant = std::make_unique<Variant>(
      Variant{params, generate_pointwise_kernel(fusion_, analysis_, params)});
  if (dump_enabled(DumpOption::params)) {
    dump("params", params.to_string() + "\n");
  }
  if (dump_enabled(DumpOption::cuda_kernel)) {
    dump("cuda_kernel", variant->source.code);
  }
  variants_.push_back(std::move(variant));
  return *variants_.back();
}

std::string PointwiseExecutor::cuda_code_for(
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
  const PointwiseSchedule schedule = schedule_pointwise(
      analysis_, input_args(args), outputs, device_info_of(bound.device),
      pointwise_tuning());
  std::lock_guard<std::mutex> lock(mutex_);
  return variant_for(schedule.params).source.code;
}

cuda_driver::FunctionResources PointwiseExecutor::last_resources() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_kernel_ == nullptr ? cuda_driver::FunctionResources{}
                                 : last_kernel_->resources;
}

std::string PointwiseExecutor::last_cuda_code() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_ == nullptr ? std::string() : last_->source.code;
}

std::optional<std::vector<at::Tensor>> PointwiseExecutor::run(
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

  const PointwiseSchedule schedule = schedule_pointwise(
      analysis_, input_args(args), outputs, device_info_of(device),
      pointwise_tuning());
  Variant* variant = nullptr;
  const LoadedKernel* kernel = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    variant = &variant_for(schedule.params);
    last_ = variant;
    if (schedule.grid_size > 0) {
      const LoadedKernel*& loaded = variant->loaded[device.index()];
      if (loaded == nullptr) {
        loaded = &load_kernel(
            variant->source.code, variant->source.name, device.index());
      }
      kernel = loaded;
      last_kernel_ = loaded;
    }
  }

  if (schedule.grid_size > 0) {
    LaunchValues launch;
    for (const at::Tensor& t : tensors) {
      launch.pointers.push_back(t.data_ptr());
    }
    launch.values = value_input_values(
        fusion_, analysis_.value_inputs, args,
        [&](const Val* v) -> const Argument& { return argument_of(args, v); });
    launch.numel = schedule.space.numel;
    launch.extents = schedule.space.extents;
    launch.strides = schedule.space.strides;
    std::vector<uint64_t> packed = pack_args(variant->source.layout, launch);
    launch_on_current_stream(
        *kernel, device, {static_cast<unsigned>(schedule.grid_size)},
        {static_cast<unsigned>(variant->params.block_size)}, packed,
        "numel=" + std::to_string(schedule.space.numel) + " " +
            variant->params.to_string());
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
