// How a generated kernel's tensors relate to execute()'s arguments, shared
// by the pointwise and reduction executors: where each fusion input sits
// among the arguments, which kernel tensor (inputs, then outputs) each
// fusion output is, and the outputs' sizes and fresh allocations.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <optional>
#include <unordered_map>
#include <vector>

#include "ir/fusion.h"
#include "runtime/aten_types.h"
#include "runtime/input_binding.h"
#include "schedule/tensor_arg.h"

namespace nvfuse {

class KernelIo {
 public:
  // `inputs`: the tensors the kernel loads; `outputs`: the ones it writes.
  KernelIo(const Fusion& fusion, std::vector<const TensorView*> inputs,
      std::vector<const TensorView*> outputs);

  // The execute() argument bound to the fusion input `input`.
  const Argument& argument_of(const std::vector<Argument>& args, const Val* input) const {
    return args.at(input_positions_.at(input));
  }
  // What the heuristics see of the tensors the kernel reads.
  std::vector<TensorArg> input_args(const std::vector<Argument>& args) const;
  // What they see of the outputs before any is allocated (cuda_code_for);
  // throws UnsupportedError when a size is not known before running.
  std::vector<TensorArg> planned_output_args(BoundInputs& bound) const;

  // Outputs that update an input in place (add_output(t, alias_input=x))
  // are written straight into x where that is safe (in_place_target), not
  // into a fresh tensor copied into x afterwards: for the outputs `safe`
  // accepts (asked once, here), those whose input's elements the kernel
  // reads only in the thread that writes them, before it writes them
  // (every output of the pointwise kernel; a reduction's per-row outputs of
  // per-row math). None by default.
  void write_aliases_in_place(const std::function<bool(const TensorView&)>& safe) {
    writes_in_place_.clear();
    for (const TensorView* out : outputs_) {
      writes_in_place_.push_back(safe(*out));
    }
  }

  // The kernel's tensors for one launch: its inputs, then fresh outputs from
  // the caching allocator laid out by their allocation domains (poisoned
  // under NVFUSE_POISON_OUTPUTS=1), or the inputs they update in place;
  // nullopt when an output size is unknown.
  std::optional<std::vector<at::Tensor>> launch_tensors(
      const std::vector<Argument>& args, BoundInputs& bound) const;
  // The outputs among `tensors`, described for the heuristics.
  std::vector<TensorArg> output_args(const std::vector<at::Tensor>& tensors) const;
  // The values of a kernel's by-value inputs for this call (CPU scalar
  // tensors, fusion scalars, and scalars computed on the host: from the
  // bound sizes where the expression evaluator can, else by the reference
  // evaluator).
  std::vector<ScalarValue> values_of(const std::vector<const Val*>& value_inputs,
      const std::vector<Argument>& args, BoundInputs& bound) const;
  // The value of each fusion output (outputs that are inputs are returned
  // as given).
  std::vector<at::Tensor> fusion_outputs(
      const std::vector<Argument>& args, const std::vector<at::Tensor>& tensors) const;

 private:
  const Fusion& fusion_;
  std::vector<const TensorView*> inputs_;
  std::vector<const TensorView*> outputs_;
  std::unordered_map<const Val*, size_t> input_positions_;
  // Per fusion output: its index among the kernel's tensors, or -1 when it
  // is a fusion input returned as is.
  std::vector<int> output_slots_;
  std::vector<bool> writes_in_place_;  // per output; empty: none

  // The input tensor output `i` updates, when the kernel can write it
  // directly: same device, dtype, sizes and the strides a fresh output
  // would have, no overlap within it or with another kernel input, and no
  // other output reading or updating it; else nullopt.
  std::optional<at::Tensor> in_place_target(size_t i, const std::vector<int64_t>& sizes,
      const std::vector<Argument>& args, c10::Device device) const;
};

}  // namespace nvfuse
