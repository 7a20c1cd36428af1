#include "runtime/coordinate_executor.h"

#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>

#include <algorithm>
#include <numeric>

#include "runtime/kernel_launch.h"
#include "runtime/process_setting.h"
#include "runtime/rng_state.h"
#include "runtime/scatter_sizes.h"

namespace nvfuse {

namespace {

ProcessSetting<CoordinateTuning>& tuning_setting() {
  static ProcessSetting<CoordinateTuning> setting;
  return setting;
}

// The schedule over the iteration space `extents` for tensors (inputs then
// outputs) described as `tensors`; nullopt when the outputs differ in
// shape. With a scan axis (>= 0), the scan kernel's launch.
std::optional<CoordinateSchedule> schedule_for(size_t input_count,
    const std::vector<TensorArg>& tensors, const std::vector<int64_t>& extents,
    int64_t lane_alignment, const LaneRequirements& lanes, const std::vector<int64_t>& shifts,
    int64_t scan_axis) {
  for (size_t t = input_count + 1; t < tensors.size(); ++t) {
    if (tensors[t].sizes != tensors[input_count].sizes) {
      return std::nullopt;
    }
  }
  CoordinateSchedule schedule =
      schedule_coordinates(extents, tensors, lane_alignment, coordinate_tuning());
  schedule.params.vectors_aligned =
      vector_accesses_aligned(schedule.params.vector_width, tensors, lanes.vector_accesses, shifts);
  if (scan_axis >= 0) {
    schedule_scan(schedule, extents, static_cast<int>(scan_axis));
  } else {
    schedule.params.dense_tensors = dense_tensors(extents, tensors);
    choose_flat_lanes(schedule, extents, tensors, input_count, lanes.flat, coordinate_tuning());
  }
  return schedule;
}

}  // namespace

void set_coordinate_tuning(const CoordinateTuning& tuning) {
  check_launch_tuning(
      tuning.block_size, tuning.max_unroll, tuning.bytes_per_thread, "bytes_per_thread");
  tuning_setting().set(tuning);
}

CoordinateTuning coordinate_tuning() { return tuning_setting().get(); }

std::unique_ptr<CoordinateExecutor> CoordinateExecutor::create(
    const Fusion& fusion, CoordinateAnalysis analysis) {
  return std::unique_ptr<CoordinateExecutor>(new CoordinateExecutor(fusion, std::move(analysis)));
}

CoordinateExecutor::CoordinateExecutor(const Fusion& fusion, CoordinateAnalysis analysis)
    : GeneratedKernelExecutor<CoordinateParams>([this](const CoordinateParams& params) {
        return generate_coordinate_kernel(fusion_, analysis_, params);
      }),
      fusion_(fusion),
      analysis_(std::move(analysis)),
      io_(fusion, analysis_.inputs, analysis_.outputs),
      lanes_(lane_requirements(fusion, analysis_)) {}

int64_t CoordinateExecutor::lane_alignment(
    const std::vector<Argument>& args, BoundInputs& bound) const {
  if (!lanes_.shareable) {
    return 1;
  }
  int64_t alignment = 0;
  for (const ScalarValue& v : io_.values_of(lanes_.multiples, args, bound)) {
    alignment = std::gcd(alignment, v.as_int());
  }
  return alignment;
}

std::vector<int64_t> CoordinateExecutor::lane_shifts(
    const std::vector<Argument>& args, BoundInputs& bound) const {
  std::vector<int64_t> shifts;
  for (const ScalarValue& v : io_.values_of(lanes_.alignment_terms, args, bound)) {
    shifts.push_back(v.as_int());
  }
  return shifts;
}

std::optional<std::vector<int64_t>> CoordinateExecutor::iteration_extents(
    const std::vector<TensorArg>& tensors, BoundInputs& bound) const {
  if (analysis_.scatter == nullptr) {
    return tensors[analysis_.inputs.size()].sizes;
  }
  auto sizes = output_sizes_of({analysis_.scatter->input(1)->as<TensorView>()}, bound);
  if (!sizes.has_value()) {
    return std::nullopt;
  }
  return sizes->front();
}

std::shared_ptr<const CoordinateSchedule> CoordinateExecutor::memoized_schedule(
    const std::vector<TensorArg>& tensors, const std::vector<int64_t>& extents,
    const std::vector<Argument>& args, BoundInputs& bound) {
  const int64_t alignment = lane_alignment(args, bound);
  const std::vector<int64_t> shifts = lane_shifts(args, bound);
  const CoordinateTuning tuning = coordinate_tuning();
  std::vector<int64_t> numbers = {
      alignment, tuning.block_size, tuning.bytes_per_thread, tuning.max_unroll};
  numbers.insert(numbers.end(), shifts.begin(), shifts.end());
  if (analysis_.scatter != nullptr) {
    // A computed index tensor's sizes are not among the tensors.
    numbers.insert(numbers.end(), extents.begin(), extents.end());
  }
  return recent_schedules_.get(tensors, std::move(numbers), [&] {
    auto schedule = schedule_for(
        analysis_.inputs.size(), tensors, extents, alignment, lanes_, shifts, analysis_.scan_axis);
    if (schedule.has_value() && analysis_.scatter != nullptr) {
      const TensorArg& in = tensors[scatter_input_slot()];
      schedule_scatter_rows(
          *schedule, in.sizes, extents, analysis_.scatter->dim(), size_in_bytes(in.dtype));
    }
    return schedule;
  });
}

size_t CoordinateExecutor::scatter_input_slot() const {
  const auto& inputs = analysis_.inputs;
  return std::find(inputs.begin(), inputs.end(), analysis_.scatter->input(0)->as<TensorView>()) -
      inputs.begin();
}

void CoordinateExecutor::prepare_scatter(const std::vector<at::Tensor>& tensors,
    const CoordinateSchedule& schedule, const std::vector<int64_t>& extents,
    BoundInputs& bound) const {
  const ScatterOp& scatter = *analysis_.scatter;
  const at::Tensor& in = tensors[scatter_input_slot()];
  auto src = output_sizes_of({scatter.input(2)->as<TensorView>()}, bound);
  NVFUSE_ASSERT(src.has_value(), "a scatter's src has unknown sizes");
  check_scatter_sizes(in.sizes().vec(), extents, src->front(), scatter.dim());
  if (!schedule.params.scatter_rows) {
    // The kernel writes src's values into a copy of the input (the
    // staged-row form copies each row itself).
    tensors[analysis_.inputs.size()].copy_(in);
  }
}

std::string CoordinateExecutor::cuda_code_for(
    const std::vector<Argument>& args, BoundInputs& bound) {
  std::vector<TensorArg> tensors = io_.input_args(args);
  for (TensorArg& out : io_.planned_output_args(bound)) {
    tensors.push_back(std::move(out));
  }
  const auto extents = iteration_extents(tensors, bound);
  NVFUSE_CHECK_AS(ErrorKind::kUnsupported, extents.has_value(),
      "the scatter's index sizes are not known before running it");
  auto schedule = memoized_schedule(tensors, *extents, args, bound);
  NVFUSE_CHECK_AS(ErrorKind::kUnsupported, schedule != nullptr,
      "the outputs of this fusion differ in shape for these inputs");
  return variants_.code_for(schedule->params);
}

std::optional<std::vector<at::Tensor>> CoordinateExecutor::run(
    const std::vector<Argument>& args, BoundInputs& bound) {
  const c10::Device device = bound.device;
  const c10::DeviceGuard guard(device);
  auto tensors = io_.launch_tensors(args, bound);
  if (!tensors.has_value()) {
    return std::nullopt;
  }
  std::vector<TensorArg> described;
  for (const at::Tensor& t : *tensors) {
    described.push_back(tensor_arg_of(t));
  }
  const auto extents = iteration_extents(described, bound);
  if (!extents.has_value()) {
    return std::nullopt;
  }
  const auto schedule = memoized_schedule(described, *extents, args, bound);
  if (schedule == nullptr) {
    return std::nullopt;
  }
  if (analysis_.scatter != nullptr) {
    prepare_scatter(*tensors, *schedule, *extents, bound);
  }
  const bool launch = schedule->grid_size > 0;
  CoordinateParams params = schedule->params;
  params.graph_rng = launch && draws_in_graph(analysis_.drawn_random_ops.size(), device);
  auto [source, kernel] =
      variants_.for_launch(params, launch ? device.index() : -1, may_defer_compile);
  if (launch && kernel == nullptr) {
    return std::nullopt;  // still compiling (tiered compilation)
  }
  if (launch) {
    LaunchValues values;
    for (const at::Tensor& t : *tensors) {
      values.pointers.push_back(t.data_ptr());
      values.strides.push_back(t.strides().vec());
    }
    values.values = io_.values_of(analysis_.value_inputs, args, bound);
    append_drawn_seeds(values, analysis_.drawn_random_ops.size(), device);
    check_drawn_in_graph(values, params.graph_rng);
    values.numel = schedule->numel;
    values.extents = *extents;
    values.divisors = coordinate_divisors(
        values.extents, schedule->params.flat_lanes ? 1 : schedule->params.vector_width);
    std::vector<uint64_t> packed = pack_args(source->layout, values);
    launch_on_current_stream(
        *kernel, device, {static_cast<unsigned>(schedule->grid_size)},
        {static_cast<unsigned>(schedule->params.block_size)}, packed,
        [&] {
          return "numel=" + std::to_string(schedule->numel) + " " + schedule->params.to_string();
        },
        static_cast<unsigned>(schedule->shared_bytes));
  }
  return io_.fusion_outputs(args, *tensors);
}

}  // namespace nvfuse
