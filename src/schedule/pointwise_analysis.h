// canSchedule for the pointwise scheduler, and what it learns doing so:
// which tensors the kernel reads and writes, which scalars it takes by value,
// and how each tensor's axes map onto the iteration space (the logical axes
// of the first output).
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/fusion.h"

namespace nvfuse {

struct PointwiseAnalysis {
  // Tensors the kernel loads through a pointer (device tensors, 0-d too).
  std::vector<const TensorView*> inputs;
  // Values the kernel takes by value: CPU scalar tensors (is_cpu) and the
  // symbolic scalars its exprs use (computed on the host).
  std::vector<const Val*> value_inputs;
  // Tensors the kernel writes (fusion outputs that are not fusion inputs),
  // each once.
  std::vector<const TensorView*> outputs;
  // For each tensor on the way from the inputs to the outputs: the
  // iteration axis of each of its logical axes (-1 for none).
  std::unordered_map<const TensorView*, std::vector<int>> axis_map;
  // The rank of the iteration space.
  int rank = 0;
};

// The analysis, or nullopt with the reason in `why_not` when the fusion has
// exprs the pointwise kernel cannot run (reductions, complex or float8
// values, outputs broadcast against the others...).
std::optional<PointwiseAnalysis> analyze_pointwise(
    const Fusion& fusion,
    std::string* why_not);

// The element types the generated code handles.
bool is_codegen_dtype(DataType dtype);

}  // namespace nvfuse
