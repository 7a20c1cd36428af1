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
  // nullptr (with the reason) when the pointwise scheduler rejects `fusion`.
  static std::unique_ptr<PointwiseExecutor> try_create(const Fusion& fusion, std::string* why_not);

  std::optional<std::vector<at::Tensor>> run(
      const std::vector<Argument>& args, BoundInputs& bound) override;
  std::string cuda_code_for(const std::vector<Argument>& args, BoundInputs& bound) override;

 private:
  PointwiseExecutor(const Fusion& fusion, PointwiseAnalysis analysis);

  // The schedule of a call with these tensors (inputs then outputs),
  // the last call's when it applies (schedule_memo.h).
  PointwiseSchedule schedule_for(const std::vector<TensorArg>& tensors, const DeviceInfo& device,
      const PointwiseTuning& tuning);

  const Fusion& fusion_;
  PointwiseAnalysis analysis_;
  KernelIo io_;
  ScheduleMemo<PointwiseSchedule> last_schedule_;
};

}  // namespace nvfuse
