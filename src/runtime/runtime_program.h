// The runtime program of a fusion cut into parts (segment/aten_segmenter.h):
// which part runs when, where each reads its arguments and where its
// outputs go, as indices into the call's arguments and one flat array of
// value slots. Built once with the executor, replayed by every call:
// nothing on the call path looks values up by IR node, and a slot is freed
// right after the last step that reads it, so a long chain holds only the
// tensors still to be read (the caching allocator hands the rest to later
// steps) rather than every intermediate until the call returns.
//
// The program does not depend on the inputs' signature because the cuts do
// not: what does (each kernel's schedule and compiled variant) is memoized
// per signature by the step's executor (schedule_memo.h, the kernel cache).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "runtime/aten_types.h"
#include "segment/aten_segmenter.h"

namespace nvfuse {

// Where a step reads a value: argument `index` of the call, or value slot
// `index`. `expanded_as`: set when the tensor read declares expanded
// broadcast axes, which a producer on the reference evaluator may have
// written out; the step reads them with stride 0.
struct ValueSource {
  bool from_argument = false;
  size_t index = 0;
  const TensorView* expanded_as = nullptr;
};

// Step i runs plan (part) i: the plans come producers first.
struct ProgramStep {
  const char* kind = "fused";        // "fused", "aten" or "view"
  std::vector<ValueSource> sources;  // one per input of the part
  std::vector<size_t> destinations;  // the slot of each of its outputs
  std::vector<size_t> frees;         // slots no later step reads
};

struct RuntimeProgram {
  size_t slot_count = 0;
  std::vector<ProgramStep> steps;
  std::vector<ValueSource> outputs;  // one per fusion output

  // One line per step ("2 fused (arg 0, %1) -> %2; free %1"), then the
  // outputs.
  std::string to_string() const;
};

// The value `source` names in a replay: an argument of the call, or a slot
// (with stride 0 on the axes `expanded_as` expands).
Argument value_of(const ValueSource& source, const std::vector<Argument>& args,
    const std::vector<at::Tensor>& slots);

// The program running `plans` (producers first) for `fusion`, the fusion
// they were cut from.
RuntimeProgram build_runtime_program(
    const Fusion& fusion, const std::vector<const FusionSegment*>& plans);

}  // namespace nvfuse
