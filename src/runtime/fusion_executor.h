// Runs a cached fusion: binds and validates inputs, runs the prepared
// (pre-segmentation-passed) fusion, lays outputs out by allocation domain,
// and writes in-place outputs into their inputs.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <vector>

#include "frontend/fusion_cache.h"
#include "runtime/aten_types.h"
#include "runtime/kernel_executor.h"

namespace nvfuse {

class FusionExecutor : public RuntimeState {
 public:
  // Clones `definition` and runs the pre-segmentation passes on the clone.
  explicit FusionExecutor(const Fusion& definition);

  // The outputs that are not written in place, in definition order. CUDA
  // inputs run as generated kernels when the pointwise or the reduction
  // scheduler accepts the fusion (or each of its segments, when its
  // reductions reduce different axes); everything else runs on the ATen
  // reference evaluator.
  std::vector<at::Tensor> execute(const std::vector<Argument>& args);
  const Fusion& prepared_fusion() const { return *fusion_; }

  // The generated kernel for `args` (without running it), and the last one
  // launched.
  std::string cuda_code_for(const std::vector<Argument>& args);
  std::string last_cuda_code() const;
  // Registers and local memory (spill) bytes of the last kernel launched.
  cuda_driver::FunctionResources last_resources() const;

 private:
  // A part of the fusion run as one kernel (or on the reference evaluator):
  // the whole fusion, or a clone keeping only some outputs.
  struct Segment {
    const Fusion* fusion = nullptr;  // the prepared fusion, or `owned`
    std::unique_ptr<Fusion> owned;   // a clone keeping some outputs
    std::unique_ptr<KernelExecutor> kernel;  // nullptr: reference evaluator
    std::string kind;                // "pointwise" or "reduction"
    std::string why_no_kernel;
    std::vector<size_t> outputs;     // positions among the fusion's outputs
  };

  // Separates the segments' kernels in cuda_code_for and last_cuda_code
  // ("" for a single segment).
  std::string segment_header(const Segment& segment, size_t segment_count) const;
  // Runs `segment` (its kernel, else the reference evaluator) into `values`.
  // False when its kernel declined these inputs and `fallback_` should run.
  bool run_segment(
      Segment& segment,
      const std::vector<Argument>& args,
      bool may_decline,
      std::vector<at::Tensor>& values,
      std::vector<bool>& from_kernel,
      c10::Device& device);

  std::unique_ptr<Fusion> fusion_;
  std::vector<Segment> segments_;
  // One segment per reduction class, for calls the whole fusion's kernel
  // declines (an inner-outer reduction whose rows do not fit its one
  // kernel); empty when there is no such split.
  std::vector<Segment> fallback_;
  bool last_ran_fallback_ = false;
};

// The executor of a cached fusion, created on first use.
FusionExecutor& executor_for(CachedFusion& entry);

// Executes a cached fusion. Internal errors carry the fusion's repro script.
std::vector<at::Tensor> execute_cached_fusion(
    int64_t fusion_id,
    const std::vector<Argument>& args);

}  // namespace nvfuse
