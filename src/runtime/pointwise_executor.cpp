#include "runtime/pointwise_executor.h"

#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>

#include <optional>

#include "codegen/pointwise_body.h"
#include "runtime/host_timing.h"
#include "runtime/kernel_launch.h"
#include "runtime/process_setting.h"
#include "schedule/coordinate_params.h"

namespace nvfuse {

namespace {

ProcessSetting<PointwiseTuning>& tuning_setting() {
  static ProcessSetting<PointwiseTuning> setting;
  return setting;
}

}  // namespace

void set_pointwise_tuning(const PointwiseTuning& tuning) {
  check_launch_tuning(
      tuning.block_size, tuning.max_unroll, tuning.elements_per_thread, "elements_per_thread");
  NVFUSE_CHECK(
      tuning.transpose_tile == 0 || tuning.transpose_tile == 32 || tuning.transpose_tile == 64,
      "transpose_tile must be 0 (the default), 32 or 64, got ", tuning.transpose_tile);
  NVFUSE_CHECK(tuning.heavy_math_budget >= 0, "heavy_math_budget must be at least 0, got ",
      tuning.heavy_math_budget);
  NVFUSE_CHECK(tuning.transpose_vector == 0 || tuning.transpose_vector == 1 ||
          tuning.transpose_vector == 2 || tuning.transpose_vector == 4,
      "transpose_vector must be 0 (by element size), 1, 2 or 4, got ", tuning.transpose_vector);
  tuning_setting().set(tuning);
}

PointwiseTuning pointwise_tuning() { return tuning_setting().get(); }

std::unique_ptr<PointwiseExecutor> PointwiseExecutor::create(
    const Fusion& fusion, PointwiseAnalysis analysis) {
  return std::unique_ptr<PointwiseExecutor>(new PointwiseExecutor(fusion, std::move(analysis)));
}

PointwiseExecutor::PointwiseExecutor(const Fusion& fusion, PointwiseAnalysis analysis)
    : GeneratedKernelExecutor<PointwiseParams>([this](const PointwiseParams& params) {
        return generate_pointwise_kernel(fusion_, analysis_, params);
      }),
      fusion_(fusion),
      analysis_(std::move(analysis)),
      io_(fusion, analysis_.inputs, analysis_.outputs) {
  // Each thread reads an element of an input only where it writes the
  // same element of the outputs (inputs of other shapes are broadcasts,
  // never updated in place: their sizes differ).
  io_.write_aliases_in_place([](const TensorView&) { return true; });
}

std::string PointwiseExecutor::cuda_code_for(
    const std::vector<Argument>& args, BoundInputs& bound) {
  const PointwiseSchedule schedule = schedule_pointwise(analysis_, io_.input_args(args),
      io_.planned_output_args(bound), device_info_of(bound.device), pointwise_tuning());
  return variants_.code_for(schedule.params);
}

std::shared_ptr<const PointwiseSchedule> PointwiseExecutor::schedule_for(
    const std::vector<TensorArg>& tensors, const DeviceInfo& device,
    const PointwiseTuning& tuning) {
  std::vector<int64_t> numbers = {device.sm_count, device.arch, tuning.block_size,
      tuning.max_unroll, tuning.elements_per_thread, tuning.transpose_tile, tuning.transpose_vector,
      tuning.heavy_math_budget};
  return recent_schedules_.get(tensors, std::move(numbers), [&] {
    const auto split = tensors.begin() + static_cast<std::ptrdiff_t>(analysis_.inputs.size());
    return schedule_pointwise(analysis_, std::vector<TensorArg>(tensors.begin(), split),
        std::vector<TensorArg>(split, tensors.end()), device, tuning);
  });
}

std::optional<std::vector<at::Tensor>> PointwiseExecutor::run(
    const std::vector<Argument>& args, BoundInputs& bound) {
  const c10::Device device = bound.device;
  std::optional<HostStepTimer> step("06 device guard, allocate outputs");
  const c10::DeviceGuard guard(device);
  std::optional<HostStepTimer> allocation("06b allocate outputs");
  auto tensors = io_.launch_tensors(args, bound);
  allocation.reset();
  if (!tensors.has_value()) {
    return std::nullopt;
  }
  step.emplace("07 schedule, kernel lookup");
  std::optional<HostStepTimer> part("07a describe the tensors");
  std::vector<TensorArg> described = io_.input_args(args);
  for (TensorArg& out : io_.output_args(*tensors)) {
    described.push_back(std::move(out));
  }
  part.emplace("07b schedule (the memo)");
  const std::shared_ptr<const PointwiseSchedule> kept =
      schedule_for(described, device_info_of(device), pointwise_tuning());
  const PointwiseSchedule& schedule = *kept;
  const bool launch = schedule.grid_size > 0;
  part.emplace("07c kernel lookup");
  auto [source, kernel] =
      variants_.for_launch(schedule.params, launch ? device.index() : -1, may_defer_compile);
  part.reset();
  if (launch && kernel == nullptr) {
    return std::nullopt;  // still compiling (tiered compilation)
  }
  step.emplace("08 pack arguments, launch");
  if (launch) {
    std::optional<HostStepTimer> part("08a launch values");
    LaunchValues values;
    for (const at::Tensor& t : *tensors) {
      values.pointers.push_back(t.data_ptr());
    }
    values.values = io_.values_of(analysis_.value_inputs, args, bound);
    values.numel = schedule.space.numel;
    values.extents = schedule.space.extents;
    values.strides = schedule.space.strides;
    if (divides_by_magic_numbers(schedule.params)) {
      values.divisors = coordinate_divisors(values.extents, 1);
    }
    part.emplace("08p pack the parameter block");
    std::vector<uint64_t> packed = pack_args(source->layout, values);
    part.reset();
    launch_on_current_stream(*kernel, device, {static_cast<unsigned>(schedule.grid_size)},
        {static_cast<unsigned>(schedule.params.block_size)}, packed, [&] {
          return "numel=" + std::to_string(schedule.space.numel) + " " +
              schedule.params.to_string();
        });
  }
  step.reset();
  return io_.fusion_outputs(args, *tensors);
}

}  // namespace nvfuse
