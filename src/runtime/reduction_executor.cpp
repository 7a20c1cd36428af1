#include "runtime/reduction_executor.h"

#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>

#include <mutex>

#include "runtime/kernel_launch.h"

namespace nvfuse {

namespace {

std::mutex tuning_mutex;
ReductionTuning& tuning_storage() {
  static ReductionTuning tuning;
  return tuning;
}

bool is_pow2_threads(int threads) {
  return threads >= 32 && threads <= 1024 && (threads & (threads - 1)) == 0;
}

}  // namespace

void set_reduction_tuning(const ReductionTuning& tuning) {
  NVFUSE_CHECK(
      tuning.bytes_per_thread >= 1,
      "bytes_per_thread must be at least 1");
  NVFUSE_CHECK(
      is_pow2_threads(tuning.max_persistent_threads) &&
          is_pow2_threads(tuning.chunked_threads),
      "max_persistent_threads and chunked_threads must be powers of two from 32 "
      "to 1024");
  std::lock_guard<std::mutex> lock(tuning_mutex);
  tuning_storage() = tuning;
}

ReductionTuning reduction_tuning() {
  std::lock_guard<std::mutex> lock(tuning_mutex);
  return tuning_storage();
}

std::unique_ptr<ReductionExecutor> ReductionExecutor::try_create(
    const Fusion& fusion,
    std::string* why_not) {
  auto analysis = analyze_reduction(fusion, why_not);
  if (!analysis.has_value()) {
    return nullptr;
  }
  return std::unique_ptr<ReductionExecutor>(
      new ReductionExecutor(std::move(*analysis), fusion));
}

ReductionExecutor::ReductionExecutor(ReductionAnalysis analysis, const Fusion& fusion)
    : analysis_(std::move(analysis)),
      io_(fusion, analysis_.inputs, analysis_.outputs),
      variants_([this](const ReductionParams& params) {
        return generate_reduction_kernel(analysis_, params);
      }) {}

std::optional<ReductionSchedule> ReductionExecutor::schedule(
    const std::vector<Argument>& args,
    BoundInputs& bound,
    const std::vector<TensorArg>& outputs) const {
  auto reference = output_sizes_of({analysis_.reference}, bound);
  if (!reference.has_value()) {
    return std::nullopt;
  }
  return schedule_reduction(
      analysis_, reference->front(), io_.input_args(args), outputs,
      device_info_of(bound.device), reduction_tuning());
}

std::string ReductionExecutor::cuda_code_for(
    const std::vector<Argument>& args,
    BoundInputs& bound) {
  auto planned = schedule(args, bound, io_.planned_output_args(bound));
  NVFUSE_CHECK_AS(
      ErrorKind::kUnsupported, planned.has_value(),
      "these inputs run on the reference evaluator: their reduced axes are not "
      "one strided axis in every tensor");
  return variants_.code_for(planned->params);
}

std::string ReductionExecutor::last_cuda_code() const {
  return variants_.last_code();
}

cuda_driver::FunctionResources ReductionExecutor::last_resources() const {
  return variants_.last_resources();
}

std::optional<std::vector<at::Tensor>> ReductionExecutor::run(
    const std::vector<Argument>& args,
    BoundInputs& bound) {
  const c10::Device device = bound.device;
  const c10::DeviceGuard guard(device);
  auto tensors = io_.launch_tensors(args, bound);
  if (!tensors.has_value()) {
    return std::nullopt;
  }
  const auto planned = schedule(args, bound, io_.output_args(*tensors));
  if (!planned.has_value()) {
    return std::nullopt;
  }
  if (planned->grid_x > 0) {
    auto [source, kernel] = variants_.for_launch(planned->params, device.index());
    LaunchValues values;
    for (const at::Tensor& t : *tensors) {
      values.pointers.push_back(t.data_ptr());
    }
    values.values = io_.values_of(analysis_.value_inputs, args);
    values.numel = planned->space.rows;
    values.width = planned->space.width;
    values.extents = planned->space.row_extents;
    values.strides = planned->space.row_strides;
    values.col_strides = planned->space.col_strides;
    at::Tensor workspace;
    at::Tensor semaphores;
    if (planned->params.split) {
      const auto options = at::TensorOptions().device(device);
      workspace = at::empty({planned->workspace_bytes}, options.dtype(at::kByte));
      semaphores = at::zeros({planned->grid_x}, options.dtype(at::kInt));
      values.workspace = workspace.data_ptr();
      values.semaphores = semaphores.data_ptr();
    }
    std::vector<uint64_t> packed = pack_args(source->layout, values);
    launch_on_current_stream(
        *kernel, device,
        {static_cast<unsigned>(planned->grid_x), static_cast<unsigned>(planned->grid_y)},
        {static_cast<unsigned>(planned->params.block_size)}, packed,
        "rows=" + std::to_string(planned->space.rows) +
            " width=" + std::to_string(planned->space.width) + " " +
            planned->params.to_string());
  }
  return io_.fusion_outputs(args, *tensors);
}

}  // namespace nvfuse
