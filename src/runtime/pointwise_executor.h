// Runs a pointwise fusion on CUDA tensors as one generated kernel: per call,
// sizes -> schedule -> (cached) kernel -> launch on torch's current stream.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/pointwise_codegen.h"
#include "runtime/generated_kernel_executor.h"
#include "runtime/kernel_io.h"
#include "runtime/schedule_memo.h"
#include "schedule/pointwise_analysis.h"

namespace nvfuse {

// The process's launch-shape tuning (for experiments; see PointwiseTuning).
void set_pointwise_tuning(const PointwiseTuning& tuning);
PointwiseTuning pointwise_tuning();

class PointwiseExecutor : public GeneratedKernelExecutor<PointwiseParams> {
 public:
  // The executor of `fusion`'s kernel (segment/kernel_choice.h chose it).
  static std::unique_ptr<PointwiseExecutor> create(
      const Fusion& fusion, PointwiseAnalysis analysis);

  std::optional<std::vector<at::Tensor>> run(
      const std::vector<Argument>& args, BoundInputs& bound) override;
  std::string cuda_code_for(const std::vector<Argument>& args, BoundInputs& bound) override;

 private:
  PointwiseExecutor(const Fusion& fusion, PointwiseAnalysis analysis);

  // The schedule of a call with these tensors (inputs then outputs),
  // the last call's when it applies (schedule_memo.h).
  std::shared_ptr<const PointwiseSchedule> schedule_for(const std::vector<TensorArg>& tensors,
      const DeviceInfo& device, const PointwiseTuning& tuning);

  const Fusion& fusion_;
  PointwiseAnalysis analysis_;
  KernelIo io_;
  ScheduleMemo<PointwiseSchedule> recent_schedules_;
};

}  // namespace nvfuse
