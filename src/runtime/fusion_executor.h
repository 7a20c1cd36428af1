// Runs a cached fusion: binds and validates inputs, runs the prepared
// (pre-segmentation-passed) fusion as the segmenter planned it
// (segment/fusion_plan.h; a fusion cut into parts replays its runtime
// program, runtime_program.h), lays outputs out by allocation domain, and
// writes in-place outputs into their inputs.
#pragma once

#include <ATen/core/Tensor.h>

#include <atomic>
#include <memory>
#include <vector>

#include "frontend/fusion_cache.h"
#include "runtime/binding_memo.h"
#include "runtime/aten_types.h"
#include "runtime/kernel_executor.h"
#include "runtime/runtime_program.h"
#include "segment/aten_segmenter.h"
#include "segment/kernel_segments.h"

namespace nvfuse {

class FusionExecutor : public RuntimeState {
 public:
  // Clones `definition` and runs the pre-segmentation passes on the clone.
  explicit FusionExecutor(const Fusion& definition);

  // The outputs that are not written in place, in definition order. CUDA
  // inputs run as generated kernels when the pointwise, reduction or
  // coordinate scheduler accepts the fusion (or each of its segments, when its
  // reductions reduce different axes); everything else runs on the ATen
  // reference evaluator.
  // `device`: where a fusion without tensor inputs runs (execute(device=)).
  std::vector<at::Tensor> execute(
      const std::vector<Argument>& args, c10::Device device = c10::Device(c10::kCPU));
  // The values of the fusion's outputs as computed, without laying them out
  // or writing in-place outputs (what a part hands to the next one);
  // from_kernel[i]: output i is a fresh kernel output in its final layout.
  // `device`: in, where to run when no tensor input says; out, where it ran.
  std::vector<at::Tensor> compute(
      const std::vector<Argument>& args, std::vector<bool>& from_kernel, c10::Device& device);
  const Fusion& prepared_fusion() const { return *fusion_; }

  // One entry per segment: ("fused" or "aten", the op names of its tensor
  // exprs). A fusion that is not cut at ATen ops is one "fused" entry.
  std::vector<std::pair<std::string, std::vector<std::string>>> segment_summary() const;

  // fd.segment(): each segment (as segment_summary cuts the fusion) as
  // Python definition text, its ops' sizes those of `args`
  // (frontend/fusion_to_python.h); defined in segment_definitions.cpp.
  struct SegmentDefinition {
    std::string kind;    // "fused", "aten" or "view"
    std::string python;  // the body of a definition of `fd`
    // Per input of the segment: (-1, i) for the fusion's input i, (j, k)
    // for output k of segment j.
    std::vector<std::pair<int64_t, int64_t>> sources;
    // Per output of the segment: its positions among the fusion's outputs
    // (none when only later segments read it).
    std::vector<std::vector<int64_t>> destinations;
  };
  std::vector<SegmentDefinition> segment_definitions(const std::vector<Argument>& args) const;

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
    const Fusion* fusion = nullptr;          // the prepared fusion, or `owned`
    std::unique_ptr<Fusion> owned;           // a clone keeping some outputs
    std::unique_ptr<KernelExecutor> kernel;  // nullptr: reference evaluator
    std::string kind;                        // "pointwise" or "reduction"
    std::string why_no_kernel;
    std::vector<size_t> outputs;  // positions among the fusion's outputs
    std::unique_ptr<BindingMemo> binding = std::make_unique<BindingMemo>();
  };

  // Separates the segments' kernels in cuda_code_for and last_cuda_code
  // ("" for a single segment).
  std::string segment_header(const Segment& segment, size_t segment_count) const;
  // Runs `segment` (its kernel, else the reference evaluator) into `values`.
  // False when its kernel declined these inputs and `fallback_` should run.
  bool run_segment(Segment& segment, const std::vector<Argument>& args, bool may_decline,
      std::vector<at::Tensor>& values, std::vector<bool>& from_kernel, c10::Device& device);
  // NVFUSE_DUMP=launch: `s`'s kernel declined `args`; ATen runs it.
  void dump_declined(const Segment& s, const std::vector<Argument>& args) const;

  // A piece of a fusion cut at its ATen exprs, run by its own executor.
  struct Part {
    FusionSegment plan;
    std::unique_ptr<FusionExecutor> executor;
  };
  // A part: a piece of a fusion cut at its ATen exprs, already through the
  // passes; it is not cut again. A host view runs on the reference
  // evaluator (an ATen view), never as a kernel.
  FusionExecutor(std::unique_ptr<Fusion> part, bool is_host_view);
  // Executors for the planned kernel segments (segment/kernel_segments.h).
  std::vector<Segment> segments_from(std::vector<KernelSegment> planned);
  // Fills segments_ and fallback_ from `plan`.
  void take_kernel_segments(KernelSegmentPlan plan);
  // Appends a part per plan (of the prepared fusion; `plans` is not empty:
  // the fusion is cut), each with its own executor, and builds program_
  // over all the parts.
  void add_parts(std::vector<FusionSegment> plans);
  // Replays program_ over the parts: the values of the fusion's outputs. With
  // `code`, appends each fused part's generated kernels to it instead (the
  // last part is not run).
  std::vector<at::Tensor> compute_parts(const std::vector<Argument>& args,
      std::vector<bool>& from_kernel, c10::Device& device, std::string* code = nullptr);
  // A fused part's kernels for `args`, or why it has none.
  std::string fused_part_code(Part& part, const std::vector<Argument>& args);
  // Runs segments_ (and fallback_): the values of the fusion's outputs.
  std::vector<at::Tensor> compute_segments(
      const std::vector<Argument>& args, std::vector<bool>& from_kernel, c10::Device& device);
  void dump_segments() const;
  // NVFUSE_DUMP=segments: whether the kernels compile ahead (empty for
  // fewer than two).
  std::string compile_ahead_note() const;
  // How many segments (of every part) run as generated kernels.
  size_t kernel_segment_count() const;
  // compute(), preceded, on a call that finds kernels not compiled yet, by
  // a pass that starts compiling them all at once (runtime/compile_ahead.h).
  std::vector<at::Tensor> compute_compiling_ahead(
      const std::vector<Argument>& args, std::vector<bool>& from_kernel, c10::Device& device);

  std::unique_ptr<Fusion> fusion_;
  // Non-empty when the fusion is cut at ATen exprs; segments_ is then empty.
  std::vector<Part> parts_;
  // The order the parts run in and where their values live (built with
  // parts_, runtime_program.h).
  RuntimeProgram program_;
  std::vector<Segment> segments_;
  // One segment per reduction class, for calls the whole fusion's kernel
  // declines (an inner-outer reduction whose rows do not fit its one
  // kernel); empty when there is no such split.
  std::vector<Segment> fallback_;
  // Two kernels or more, none of them writing an input or drawing random
  // numbers: a call that has kernels to compile compiles them at once.
  bool compiles_ahead_ = false;
  // Written by each execute, which runs without the cache entry's lock.
  std::atomic<bool> last_ran_fallback_ = false;
  // The bytes of small outputs the last call carved from shared blocks
  // (small_output_blocks.h): the next call's first block.
  std::atomic<int64_t> small_output_bytes_ = 0;
};

// The executor of a cached fusion, created on first use.
std::shared_ptr<FusionExecutor> executor_for(CachedFusion& entry);

}  // namespace nvfuse
