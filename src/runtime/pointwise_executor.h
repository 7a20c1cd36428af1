// Runs a pointwise fusion on CUDA tensors as one generated kernel: per call,
// sizes -> schedule -> (cached) kernel -> launch on torch's current stream.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "codegen/pointwise_codegen.h"
#include "runtime/generated_kernel_executor.h"
#include "runtime/kernel_io.h"
#include "schedule/pointwise_analysis.h"

namespace nvfuse {

// The process's launch-shape tuning (for experiments; see PointwiseTuning).
void set_pointwise_tuning(const PointwiseTuning& tuning);
PointwiseTuning pointwise_tuning();

class PointwiseExecutor : public GeneratedKernelExecutor<PointwiseParams> {
 public:
  // nullptr (with the reason) when the pointwise scheduler rejects `fusion`.
  static std::unique_ptr<PointwiseExecutor> try_create(
      const Fusion& fusion,
      std::string* why_not);

  std::optional<std::vector<at::Tensor>> run(
      const std::vector<Argument>& args,
      BoundInputs& bound) override;
  std::string cuda_code_for(
      const std::vector<Argument>& args,
      BoundInputs& bound) override;

 private:
  PointwiseExecutor(const Fusion& fusion, PointwiseAnalysis analysis);

  // The schedule of a call with these tensors (inputs then outputs): the
  // last call's while the tensors keep their dtypes, sizes, strides and
  // alignment (the address mod 128: what the vector width checks) and the
  // device and tuning stay, as across a training loop's calls. Scheduling
  // took ~1.5 us of a ~15 us call on the H100 VM (NVFUSE_DUMP=host_time).
  PointwiseSchedule schedule_for(
      std::vector<TensorArg> tensors,
      const DeviceInfo& device,
      const PointwiseTuning& tuning);

  struct LastSchedule {
    std::vector<TensorArg> tensors;  // addresses mod 128
    DeviceInfo device;
    PointwiseTuning tuning;
    PointwiseSchedule schedule;
  };

  const Fusion& fusion_;
  PointwiseAnalysis analysis_;
  KernelIo io_;
  std::mutex last_mutex_;  // calls may come from several threads
  std::optional<LastSchedule> last_;
};

}  // namespace nvfuse
