// Runs a reduction or normalization fusion on CUDA tensors as one generated
// kernel: per call, sizes -> reduction schedule -> (cached) kernel ->
// workspace for split reductions -> launch on torch's current stream.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "codegen/reduction_codegen.h"
#include "runtime/kernel_executor.h"
#include "runtime/cuda/kernel_cache.h"
#include "schedule/reduction_analysis.h"
#include "schedule/reduction_params.h"

namespace nvfuse {

class ReductionExecutor : public KernelExecutor {
 public:
  // nullptr (with the reason) when the reduction scheduler rejects `fusion`.
  static std::unique_ptr<ReductionExecutor> try_create(
      const Fusion& fusion,
      std::string* why_not);

  std::optional<std::vector<at::Tensor>> run(
      const std::vector<Argument>& args,
      BoundInputs& bound) override;
  std::string cuda_code_for(
      const std::vector<Argument>& args,
      BoundInputs& bound) override;
  std::string last_cuda_code() const override;
  cuda_driver::FunctionResources last_resources() const override;

 private:
  ReductionExecutor(const Fusion& fusion, ReductionAnalysis analysis);

  struct Variant {
    ReductionParams params;
    KernelSource source;
    std::map<int, const LoadedKernel*> loaded;  // per device
  };
  Variant& variant_for(const ReductionParams& params);
  const Argument& argument_of(
      const std::vector<Argument>& args,
      const Val* input) const {
    return args.at(input_positions_.at(input));
  }
  // The schedule for these inputs and (laid out) outputs; nullopt when the
  // scheduler declines them.
  std::optional<ReductionSchedule> schedule(
      const std::vector<Argument>& args,
      BoundInputs& bound,
      const std::vector<TensorArg>& outputs) const;

  const Fusion& fusion_;
  ReductionAnalysis analysis_;
  std::unordered_map<const Val*, size_t> input_positions_;
  std::vector<int> output_slots_;  // as PointwiseExecutor's
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Variant>> variants_;
  const Variant* last_ = nullptr;
  const LoadedKernel* last_kernel_ = nullptr;
};

}  // namespace nvfuse
