// Runs a pointwise fusion on CUDA tensors as one generated kernel: per call,
// sizes -> schedule -> (cached) kernel -> launch on torch's current stream.
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <string>
#include <vector>

#include "codegen/pointwise_codegen.h"
#include "runtime/aten_types.h"
#include "runtime/cuda/kernel_cache.h"
#include "runtime/input_binding.h"
#include "runtime/kernel_executor.h"
#include "schedule/pointwise_analysis.h"

namespace nvfuse {

// The process's launch-shape tuning (for experiments; see PointwiseTuning).
void set_pointwise_tuning(const PointwiseTuning& tuning);
PointwiseTuning pointwise_tuning();

class PointwiseExecutor : public KernelExecutor {
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
  std::string last_cuda_code() const override;
  cuda_driver::FunctionResources last_resources() const override;

 private:
  PointwiseExecutor(const Fusion& fusion, PointwiseAnalysis analysis);

  struct Variant {
    PointwiseParams params;
    KernelSource source;
    // Loaded per device on first launch, so later launches skip the kernel
    // cache's key computation (it hashes the source).
    std::map<int, const LoadedKernel*> loaded;
  };
  Variant& variant_for(const PointwiseParams& params);
  // The execute() argument bound to the fusion input `input`.
  const Argument& argument_of(
      const std::vector<Argument>& args,
      const Val* input) const {
    return args.at(input_positions_.at(input));
  }
  // What the heuristics see of the tensors the kernel reads.
  std::vector<TensorArg> input_args(const std::vector<Argument>& args) const;

  const Fusion& fusion_;
  PointwiseAnalysis analysis_;
  // Position of each fusion input among execute()'s arguments.
  std::unordered_map<const Val*, size_t> input_positions_;
  // Per fusion output: its index among the kernel's tensors (inputs, then
  // outputs), or -1 when it is a fusion input returned as is.
  std::vector<int> output_slots_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Variant>> variants_;
  const Variant* last_ = nullptr;
  const LoadedKernel* last_kernel_ = nullptr;
};

}  // namespace nvfuse
