#include "runtime/reduction_executor.h"

#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>

#include <algorithm>
#include <mutex>
#include <optional>

#include "codegen/kernel_names.h"
#include "runtime/host_timing.h"
#include "runtime/kernel_launch.h"
#include "runtime/output_allocation.h"
#include "runtime/process_setting.h"
#include "runtime/rng_state.h"

namespace nvfuse {

namespace {

constexpr int64_t kInnerOuterRowsPerBlock = 8;

ProcessSetting<ReductionTuning>& tuning_setting() {
  static ProcessSetting<ReductionTuning> setting;
  return setting;
}

bool is_pow2_threads(int threads) {
  return threads >= 32 && threads <= 1024 && (threads & (threads - 1)) == 0;
}

// Whether each kernel tensor (analysis.inputs, then its kernel outputs, as
// in `args`) has the reference's size on every axis mapped to a reference
// axis, or 1 on a broadcast axis. The kernel walks one reference shape;
// reductions of the same axes of differently sized tensors (a column sum
// over 768 columns beside one over 256, or symbolic sizes that differ at
// run time) must not share it.
bool matches_reference_shape(const ReductionAnalysis& analysis, const std::vector<TensorArg>& args,
    const std::vector<int64_t>& reference) {
  std::vector<const TensorView*> tvs = analysis.inputs;
  for (const TensorView* out : analysis.kernel_outputs()) {
    tvs.push_back(out);
  }
  for (size_t i = 0; i < tvs.size() && i < args.size(); ++i) {
    const auto map = analysis.axis_map.find(tvs[i]);
    if (map == analysis.axis_map.end()) {
      continue;
    }
    for (size_t axis = 0; axis < map->second.size() && axis < args[i].sizes.size(); ++axis) {
      const int ref_axis = map->second[axis];
      if (ref_axis < 0) {
        continue;
      }
      const int64_t size = args[i].sizes[axis];
      // Size 1 on a broadcast axis, or on a reduced one (a per-row value).
      const bool collapsed =
          size == 1 && (tvs[i]->logical()[axis]->is_broadcast() || analysis.reduced[ref_axis]);
      if (size != reference[ref_axis] && !collapsed) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace

void set_reduction_tuning(const ReductionTuning& tuning) {
  NVFUSE_CHECK(tuning.elements_per_thread >= 1, "elements_per_thread must be at least 1");
  NVFUSE_CHECK(
      is_pow2_threads(tuning.max_persistent_threads) && is_pow2_threads(tuning.chunked_threads),
      "max_persistent_threads and chunked_threads must be powers of two from 32 "
      "to 1024");
  const int streamed = tuning.streamed_cluster;
  NVFUSE_CHECK(streamed >= 1 && streamed <= 16 && (streamed & (streamed - 1)) == 0,
      "streamed_cluster must be 1, 2, 4, 8 or 16, got ", streamed);
  NVFUSE_CHECK(tuning.outer_rows >= 1, "outer_rows must be at least 1, got ", tuning.outer_rows);
  NVFUSE_CHECK(tuning.width_buckets == 0 || tuning.width_buckets == 1,
      "width_buckets must be 0 or 1, got ", tuning.width_buckets);
  tuning_setting().set(tuning);
}

ReductionTuning reduction_tuning() { return tuning_setting().get(); }

std::unique_ptr<ReductionExecutor> ReductionExecutor::create(
    const Fusion& fusion, ReductionAnalysis analysis) {
  return std::unique_ptr<ReductionExecutor>(new ReductionExecutor(std::move(analysis), fusion));
}

ReductionExecutor::ReductionExecutor(ReductionAnalysis analysis, const Fusion& fusion)
    : GeneratedKernelExecutor<ReductionParams>([this](const ReductionParams& params) {
        return generate_reduction_kernel(analysis_, params);
      }),
      analysis_(std::move(analysis)),
      io_(fusion, analysis_.inputs, analysis_.kernel_outputs()) {
  io_.write_aliases_in_place(
      [&](const TensorView& out) { return may_update_in_place(analysis_, fusion, out); });
}

std::shared_ptr<const ReductionSchedule> ReductionExecutor::schedule(
    const std::vector<Argument>& args, BoundInputs& bound,
    const std::vector<TensorArg>& outputs) const {
  auto reference = output_sizes_of({analysis_.reference}, bound);
  auto position_sizes = output_sizes_of(analysis_.position_tensors, bound);
  if (!reference.has_value() || !position_sizes.has_value()) {
    return nullptr;
  }
  const DeviceInfo device = device_info_of(bound.device);
  const ReductionTuning tuning = reduction_tuning();
  std::vector<TensorArg> tensors = io_.input_args(args);
  tensors.insert(tensors.end(), outputs.begin(), outputs.end());
  // The sizes bound from scalars (reference, positions) are keyed too.
  std::vector<int64_t> numbers = {device.sm_count, device.arch, tuning.elements_per_thread,
      tuning.max_persistent_threads, tuning.chunked_threads, tuning.pipelining, tuning.max_cluster,
      tuning.carry_exps, tuning.staging, tuning.streamed_cluster, tuning.outer_rows,
      tuning.width_buckets, device.l2_bytes};
  numbers.push_back(-1);
  numbers.insert(numbers.end(), reference->front().begin(), reference->front().end());
  for (const std::vector<int64_t>& sizes : *position_sizes) {
    numbers.push_back(-1);
    numbers.insert(numbers.end(), sizes.begin(), sizes.end());
  }
  return recent_schedules_.get(
      tensors, std::move(numbers), [&]() -> std::optional<ReductionSchedule> {
        // The memo keys every size, so this runs once per new shape.
        if (!matches_reference_shape(analysis_, tensors, reference->front())) {
          return std::nullopt;  // runs on the reference evaluator instead
        }
        std::vector<TensorArg> positions;
        for (size_t i = 0; i < position_sizes->size(); ++i) {
          positions.push_back(
              {analysis_.position_tensors[i]->dtype(), (*position_sizes)[i], {}, 0});
        }
        const std::vector<TensorArg> inputs(tensors.begin(), tensors.end() - outputs.size());
        return schedule_reduction(
            analysis_, reference->front(), inputs, outputs, positions, device, tuning);
      });
}

std::string ReductionExecutor::cuda_code_for(
    const std::vector<Argument>& args, BoundInputs& bound) {
  auto planned = schedule(args, bound, io_.planned_output_args(bound));
  NVFUSE_CHECK_AS(ErrorKind::kUnsupported, planned != nullptr,
      "these inputs run on the reference evaluator: their reduced axes are not "
      "one strided axis in every tensor");
  return variants_.code_for(planned->params.kernel_params());
}

std::optional<std::vector<at::Tensor>> ReductionExecutor::run(
    const std::vector<Argument>& args, BoundInputs& bound) {
  const c10::Device device = bound.device;
  // The pointwise executor's steps of NVFUSE_DUMP=host_time, by the same
  // names: one table for both kinds of kernel.
  std::optional<HostStepTimer> step("06 device guard, allocate outputs");
  const c10::DeviceGuard guard(device);
  auto tensors = io_.launch_tensors(args, bound);
  if (!tensors.has_value()) {
    return std::nullopt;
  }
  step.emplace("07 schedule, kernel lookup");
  std::optional<HostStepTimer> part("07b schedule (the memo)");
  const auto planned = schedule(args, bound, io_.output_args(*tensors));
  part.reset();
  if (planned == nullptr) {
    return std::nullopt;
  }
  step.emplace("08 pack arguments, launch");
  if (planned->params.inner_outer) {
    if (!run_inner_outer(*planned, args, *tensors, bound)) {
      return std::nullopt;
    }
  } else if (planned->grid_x > 0) {
    const ReductionParams& params = planned->params;
    std::optional<ReductionParams> own_kernel_params;
    std::optional<HostStepTimer> part("07c kernel lookup");
    const ReductionParams& kernel_params =
        kernel_params_for_launch(params, device, own_kernel_params);
    auto [source, kernel] = variants_.for_launch(kernel_params, device.index(), may_defer_compile);
    part.reset();
    if (kernel == nullptr) {
      return std::nullopt;  // still compiling (tiered compilation)
    }
    if (params.outer && params.cluster > 1 && resident_walkers(*kernel, *planned, device) == 0) {
      // No sm_90 part refuses an 8-block cluster of 512 threads; one that
      // did would get the reference path's result, not a failed launch.
      return std::nullopt;
    }
    part.emplace("08a launch values");
    LaunchValues values = launch_values(*planned, args, *tensors, bound);
    part.reset();
    check_drawn_in_graph(values, kernel_params.graph_rng);
    int64_t grid_y = planned->grid_y;
    if (params.outer && params.split) {
      // One wave of as many blocks as the kernel's occupancy holds: each
      // thread keeps one load in flight per row step, so the resident
      // threads set the bandwidth. The schedule's 4 blocks an SM left the
      // H100 at 51% occupancy and 83% of DRAM peak (bf16 sums over 32768
      // rows of 8192).
      const int resident = std::max(1, blocks_per_sm(*kernel, params.block_size, 0));
      const int64_t wave = int64_t{resident} * device_info_of(device).sm_count;
      grid_y =
          std::clamp<int64_t>(wave / planned->grid_x, 2, std::max<int64_t>(2, planned->max_grid_y));
    }
    at::Tensor workspace;
    at::Tensor semaphores;
    if (planned->params.split) {
      const HostStepTimer split_step("08w split workspace, counters");
      workspace =
          split_workspace_for_launch(device, planned->workspace_bytes / planned->grid_y * grid_y);
      semaphores = semaphores_.for_launch(device, split_counters(params, planned->grid_x, grid_y));
      values.workspace = workspace.data_ptr();
      values.semaphores = semaphores.data_ptr();
    }
    int64_t grid_x = planned->grid_x;
    if (params.pipelined || params.staged) {
      // One wave of blocks (or clusters, with the staged rows' buffers):
      // each walks its share of the rows.
      const int64_t walkers = resident_walkers(*kernel, *planned, device);
      if (walkers == 0) {
        return std::nullopt;  // the buffers do not fit an SM (as inner-outer: declined)
      }
      grid_x = std::min<int64_t>(grid_x, walkers * params.cluster);
    } else if (params.streamed()) {
      const int64_t walkers = streamed_walkers(*kernel, *planned, device);
      if (walkers == 0) {
        return std::nullopt;  // the cluster does not fit: declined
      }
      grid_x = std::min<int64_t>(grid_x, walkers * params.cluster);
    }
    part.emplace("08p pack the parameter block");
    std::vector<uint64_t> packed = pack_args(source->layout, values);
    part.reset();
    launch_on_current_stream(
        *kernel, device, {static_cast<unsigned>(grid_x), static_cast<unsigned>(grid_y)},
        {static_cast<unsigned>(params.block_size)}, packed,
        [&] { return description_of(*planned); }, static_cast<unsigned>(planned->shared_bytes),
        static_cast<unsigned>(params.cluster));
  }
  step.reset();
  return io_.fusion_outputs(args, *tensors);
}

const ReductionParams& ReductionExecutor::kernel_params_for_launch(
    const ReductionParams& params, c10::Device device, std::optional<ReductionParams>& own) const {
  const bool graph_rng = draws_in_graph(analysis_.drawn_random_ops.size(), device);
  if (!params.width_generic && !graph_rng) {
    return params;  // the common launch: no copy of the params
  }
  own = params.kernel_params();
  own->graph_rng = graph_rng;
  return *own;
}

LaunchValues ReductionExecutor::launch_values(const ReductionSchedule& planned,
    const std::vector<Argument>& args, const std::vector<at::Tensor>& tensors,
    BoundInputs& bound) const {
  LaunchValues values;
  for (const at::Tensor& t : tensors) {
    values.pointers.push_back(t.data_ptr());
  }
  values.values = io_.values_of(analysis_.value_inputs, args, bound);
  append_drawn_seeds(values, analysis_.drawn_random_ops.size(), bound.device);
  values.numel = planned.space.rows;
  values.width = planned.space.width;
  for (int lanes = planned.params.threads_per_row; lanes > 1; lanes /= 2) {
    ++values.lane_shift;  // threads_per_row is a power of two
  }
  values.extents = planned.space.row_extents;
  // The kernel's row_divider (when it divides by magic numbers): the
  // extents of row axes 1.., at least 1 (a row axis of extent 0 leaves no
  // rows to divide).
  for (size_t axis = 1; axis < values.extents.size(); ++axis) {
    values.divisors.push_back(std::max<int64_t>(1, values.extents[axis]));
  }
  values.strides = planned.space.row_strides;
  values.col_strides = planned.space.col_strides;
  return values;
}

std::string ReductionExecutor::description_of(const ReductionSchedule& planned) {
  return "rows=" + std::to_string(planned.space.rows) +
      " width=" + std::to_string(planned.space.width) + " " + planned.params.to_string();
}

int ReductionExecutor::blocks_per_sm(
    const LoadedKernel& kernel, int block_size, int64_t shared_bytes) {
  std::lock_guard<std::mutex> lock(occupancy_mutex_);
  const auto key = std::make_pair(kernel.function, shared_bytes);
  auto it = occupancy_.find(key);
  if (it == occupancy_.end()) {
    if (shared_bytes > 48 * 1024) {
      cuda_driver::allow_dynamic_shared_bytes(kernel.function, static_cast<int>(shared_bytes));
    }
    it = occupancy_
             .emplace(key,
                 cuda_driver::max_active_blocks_per_sm(
                     kernel.function, block_size, static_cast<size_t>(shared_bytes)))
             .first;
  }
  return it->second;
}

int ReductionExecutor::clusters_resident(
    const LoadedKernel& kernel, int cluster, int block_size, int64_t shared_bytes) {
  std::lock_guard<std::mutex> lock(occupancy_mutex_);
  const auto key = std::make_pair(kernel.function, shared_bytes);
  auto it = cluster_occupancy_.find(key);
  if (it == cluster_occupancy_.end()) {
    it = cluster_occupancy_
             .emplace(key,
                 cuda_driver::max_active_clusters(kernel.function, static_cast<unsigned>(cluster),
                     block_size, static_cast<unsigned>(shared_bytes)))
             .first;
  }
  return it->second;
}

int64_t ReductionExecutor::resident_walkers(
    const LoadedKernel& kernel, const ReductionSchedule& planned, c10::Device device) {
  const ReductionParams& params = planned.params;
  // blocks_per_sm also admits the dynamic shared memory, which the cluster
  // query needs first.
  const int64_t blocks = blocks_per_sm(kernel, params.block_size, planned.shared_bytes);
  if (params.launch_cluster() > 1) {
    // A row cluster walks as one; a partial cluster's blocks each walk.
    return blocks == 0 ? 0
                       : clusters_resident(kernel, params.launch_cluster(), params.block_size,
                             planned.shared_bytes) *
            params.partial_cluster;
  }
  return blocks * device_info_of(device).sm_count;
}

int64_t ReductionExecutor::streamed_walkers(
    const LoadedKernel& kernel, const ReductionSchedule& planned, c10::Device device) {
  const int64_t cluster = planned.params.cluster;
  return std::min(resident_walkers(kernel, planned, device),
      (device_info_of(device).sm_count + cluster - 1) / cluster);
}

bool ReductionExecutor::run_inner_outer(const ReductionSchedule& planned,
    const std::vector<Argument>& args, const std::vector<at::Tensor>& tensors, BoundInputs& bound) {
  const c10::Device device = bound.device;
  std::optional<ReductionParams> own_kernel_params;
  const ReductionParams& kernel_params =
      kernel_params_for_launch(planned.params, device, own_kernel_params);
  auto [source, kernel] = variants_.for_launch(kernel_params, device.index(), may_defer_compile);
  if (kernel == nullptr) {
    return false;  // still compiling (tiered compilation)
  }
  const LoadedKernel& finish =
      variants_.companion(source, reduction_finish_kernel_name(planned.params), device.index());
  // At most one wave of blocks (or clusters of blocks, each cluster holding
  // a row) walking the rows, and at least kInnerOuterRowsPerBlock rows per
  // block where that still fills the SMs: each block's partial rows cost a
  // write and a read of `width` values, and the finishing kernel walks them
  // (2048 x 1600 layer-norm backward: 71 us with a partial row per row).
  const int64_t sm_count = device_info_of(device).sm_count;
  const int64_t cluster = planned.params.cluster;
  const int64_t partial_cluster = planned.params.partial_cluster;
  const int64_t walkers = planned.params.streamed() ? streamed_walkers(*kernel, planned, device)
                                                    : resident_walkers(*kernel, planned, device);
  if (walkers == 0) {
    return false;  // the block (or cluster) does not fit: the segments take it
  }
  const int64_t row_walkers = planned.grid_x / cluster;
  int64_t grid_x = cluster *
      std::min<int64_t>({row_walkers, walkers,
          std::max<int64_t>(sm_count / cluster,
              (row_walkers + kInnerOuterRowsPerBlock - 1) / kInnerOuterRowsPerBlock)});
  // Whole partial clusters (the schedule takes them where rows outnumber
  // their blocks).
  grid_x = std::max(partial_cluster, grid_x / partial_cluster * partial_cluster);
  LaunchValues values = launch_values(planned, args, tensors, bound);
  check_drawn_in_graph(values, kernel_params.graph_rng);
  values.partial_rows = grid_x / cluster / partial_cluster * planned.rows_per_block;
  // Its own buffer: the finishing kernel reads it in a launch of its own,
  // and another thread's launch on this stream could come between.
  const at::Tensor workspace = empty_strided_on(
      {column_partial_offsets(analysis_, values.partial_rows, values.width).back()}, {1}, at::kByte,
      device);
  values.workspace = workspace.data_ptr();
  std::vector<uint64_t> packed = pack_args(source->layout, values);
  launch_on_current_stream(
      *kernel, device, {static_cast<unsigned>(grid_x)},
      {static_cast<unsigned>(planned.params.block_size)}, packed,
      [&] { return description_of(planned); }, static_cast<unsigned>(planned.shared_bytes),
      static_cast<unsigned>(planned.params.launch_cluster()));
  const int64_t finish_block_columns = finish_columns(values.partial_rows);
  launch_on_current_stream(
      finish, device,
      {static_cast<unsigned>(
          (planned.space.width + finish_block_columns - 1) / finish_block_columns)},
      {static_cast<unsigned>(kFinishThreads)}, packed,
      [&] { return "finishing the column partials, " + description_of(planned); }, 0, 1,
      programmatic_launches(device));
  return true;
}

}  // namespace nvfuse
