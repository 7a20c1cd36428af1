// Runs a reduction or normalization fusion on CUDA tensors as one generated
// kernel: per call, sizes -> reduction schedule -> (cached) kernel ->
// workspace for split reductions -> launch on torch's current stream.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "codegen/reduction_codegen.h"
#include "runtime/generated_kernel_executor.h"
#include "runtime/kernel_io.h"
#include "runtime/kernel_launch.h"
#include "runtime/schedule_memo.h"
#include "runtime/split_semaphores.h"
#include "schedule/reduction_analysis.h"
#include "schedule/reduction_params.h"

namespace nvfuse {

// The process's launch-shape tuning (for experiments; see ReductionTuning).
void set_reduction_tuning(const ReductionTuning& tuning);
ReductionTuning reduction_tuning();

class ReductionExecutor : public GeneratedKernelExecutor<ReductionParams> {
 public:
  // The executor of `fusion`'s kernel (segment/kernel_choice.h chose it).
  static std::unique_ptr<ReductionExecutor> create(
      const Fusion& fusion, ReductionAnalysis analysis);

  std::optional<std::vector<at::Tensor>> run(
      const std::vector<Argument>& args, BoundInputs& bound) override;
  std::string cuda_code_for(const std::vector<Argument>& args, BoundInputs& bound) override;

 private:
  explicit ReductionExecutor(ReductionAnalysis analysis, const Fusion& fusion);

  // The schedule for these inputs and (laid out) outputs; nullptr when the
  // scheduler declines them. The last call's when it applies
  // (schedule_memo.h).
  std::shared_ptr<const ReductionSchedule> schedule(const std::vector<Argument>& args,
      BoundInputs& bound, const std::vector<TensorArg>& outputs) const;

  // Inner-outer: the row kernel on one wave of blocks, then the kernel that
  // combines their partial rows. False when the block does not fit.
  bool run_inner_outer(const ReductionSchedule& planned, const std::vector<Argument>& args,
      const std::vector<at::Tensor>& tensors, BoundInputs& bound);
  // The params a launch's kernel is generated from: the schedule's
  // (kernel_params), reading torch's graph-safe generator state when the
  // launch is recorded into a CUDA graph. `params` itself where nothing
  // differs, else a copy made in `own`.
  const ReductionParams& kernel_params_for_launch(
      const ReductionParams& params, c10::Device device, std::optional<ReductionParams>& own) const;
  // The launch values every reduction kernel takes (no workspace yet).
  LaunchValues launch_values(const ReductionSchedule& planned, const std::vector<Argument>& args,
      const std::vector<at::Tensor>& tensors, BoundInputs& bound) const;
  // For NVFUSE_DUMP=launch.
  static std::string description_of(const ReductionSchedule& planned);
  // Blocks of `kernel` resident per SM (cached; allows the shared memory).
  int blocks_per_sm(const LoadedKernel& kernel, int block_size, int64_t shared_bytes);
  // Clusters of `cluster` such blocks resident on the device (cached; call
  // blocks_per_sm first, which allows the shared memory).
  int clusters_resident(
      const LoadedKernel& kernel, int cluster, int block_size, int64_t shared_bytes);
  // One wave of `planned`'s row walkers (blocks, clusters of blocks that
  // hold a row, or the blocks of partial clusters) with its shared memory:
  // 0 when none fits.
  int64_t resident_walkers(
      const LoadedKernel& kernel, const ReductionSchedule& planned, c10::Device device);
  // Streamed cluster rows (ReductionParams::cluster, chunked): at most one
  // cluster per `cluster` SMs walks the rows, so that the rows in flight
  // stay in L2 between their phases (a second block per SM doubles them).
  int64_t streamed_walkers(
      const LoadedKernel& kernel, const ReductionSchedule& planned, c10::Device device);

  ReductionAnalysis analysis_;
  KernelIo io_;
  mutable ScheduleMemo<ReductionSchedule> recent_schedules_;
  SplitSemaphores semaphores_;
  std::mutex occupancy_mutex_;
  std::map<std::pair<void*, int64_t>, int> occupancy_;
  std::map<std::pair<void*, int64_t>, int> cluster_occupancy_;
};

}  // namespace nvfuse
