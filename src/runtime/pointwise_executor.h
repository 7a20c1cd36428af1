// Runs a pointwise fusion on CUDA tensors as one generated kernel: per call,
// sizes -> schedule -> (cached) kernel -> launch on torch's current stream.
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "codegen/pointwise_codegen.h"
#include "runtime/aten_types.h"
#include "runtime/cuda/kernel_cache.h"
#include "runtime/input_binding.h"
#include "schedule/pointwise_analysis.h"

namespace nvfuse {

// The process's launch-shape tuning (for experiments; see PointwiseTuning).
void set_pointwise_tuning(const PointwiseTuning& tuning);
PointwiseTuning pointwise_tuning();

class PointwiseExecutor {
 public:
  // nullptr (with the reason) when the pointwise scheduler rejects `fusion`.
  static std::unique_ptr<PointwiseExecutor> try_create(
      const Fusion& fusion,
      std::string* why_not);

  // The value of each fusion output (in output order; outputs that are
  // inputs are the input tensors), or nullopt when this call cannot run as
  // a kernel (the caller then uses the reference evaluator).
  std::optional<std::vector<at::Tensor>> run(
      const std::vector<Argument>& args,
      BoundInputs& bound);

  // The source of the kernel for these inputs, without running it.
  std::string cuda_code_for(
      const std::vector<Argument>& args,
      BoundInputs& bound);
  // The source of the kernel the last run launched (empty before one).
  std::string last_cuda_code() const;

 private:
  PointwiseExecutor(const Fusion& fusion, PointwiseAnalysis analysis)
      : fusion_(fusion), analysis_(std::move(analysis)) {}

  struct Variant {
    PointwiseParams params;
    KernelSource source;
    // Loaded per device on first launch, so later launches skip the kernel
    // cache's key computation (it hashes the source).
    std::map<int, const LoadedKernel*> loaded;
  };
  Variant& variant_for(const PointwiseParams& params);
  // Output sizes from the bound extents; nullopt when one is unknown.
  std::optional<std::vector<std::vector<int64_t>>> output_sizes(
      BoundInputs& bound) const;

  const Fusion& fusion_;
  PointwiseAnalysis analysis_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<Variant>> variants_;
  const Variant* last_ = nullptr;
};

}  // namespace nvfuse
