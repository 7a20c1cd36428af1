// Runs a reduction-free fusion that the pointwise scheduler declines
// (slices, pads, cats, gathers, random ops...) as one coordinate kernel on
// CUDA tensors: per call, sizes -> schedule -> (cached) kernel -> launch on
// torch's current stream.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/coordinate_codegen.h"
#include "runtime/generated_kernel_executor.h"
#include "runtime/kernel_io.h"
#include "runtime/schedule_memo.h"
#include "schedule/coordinate_analysis.h"

namespace nvfuse {

// The process's launch-shape tuning (for experiments; see CoordinateTuning).
void set_coordinate_tuning(const CoordinateTuning& tuning);
CoordinateTuning coordinate_tuning();

class CoordinateExecutor : public GeneratedKernelExecutor<CoordinateParams> {
 public:
  // The executor of `fusion`'s kernel (segment/kernel_choice.h chose it).
  static std::unique_ptr<CoordinateExecutor> create(
      const Fusion& fusion, CoordinateAnalysis analysis);

  std::optional<std::vector<at::Tensor>> run(
      const std::vector<Argument>& args, BoundInputs& bound) override;
  std::string cuda_code_for(const std::vector<Argument>& args, BoundInputs& bound) override;

 private:
  CoordinateExecutor(const Fusion& fusion, CoordinateAnalysis analysis);
  // What the lane-axis boundaries of this call are all multiples of (0:
  // none is tested; 1: lanes cannot share predicates).
  int64_t lane_alignment(const std::vector<Argument>& args, BoundInputs& bound) const;
  // This call's values of the lane-coordinate shifts a vector access's
  // alignment depends on (LaneRequirements::alignment_terms).
  std::vector<int64_t> lane_shifts(const std::vector<Argument>& args, BoundInputs& bound) const;
  // The iteration space: the outputs' shape, or a scatter's index tensor's
  // (nullopt when a computed index's sizes are unknown before running).
  std::optional<std::vector<int64_t>> iteration_extents(
      const std::vector<TensorArg>& tensors, BoundInputs& bound) const;
  // The schedule for `tensors` (inputs then outputs) over `extents`;
  // nullptr when the outputs differ in shape. The last call's when it
  // applies (schedule_memo.h).
  std::shared_ptr<const CoordinateSchedule> memoized_schedule(const std::vector<TensorArg>& tensors,
      const std::vector<int64_t>& extents, const std::vector<Argument>& args, BoundInputs& bound);
  // Before a scatter's launch: its sizes checked as torch does, and its
  // input copied into the output the kernel writes (`tensors`: inputs,
  // then the output), unless the kernel stages rows and copies them.
  void prepare_scatter(const std::vector<at::Tensor>& tensors, const CoordinateSchedule& schedule,
      const std::vector<int64_t>& extents, BoundInputs& bound) const;
  // Where the scatter's input is among the kernel's tensors.
  size_t scatter_input_slot() const;

  const Fusion& fusion_;
  CoordinateAnalysis analysis_;
  KernelIo io_;
  LaneRequirements lanes_;
  ScheduleMemo<CoordinateSchedule> recent_schedules_;
};

}  // namespace nvfuse
