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

// Per tensor, the iteration (or reference) axis of each of its logical
// axes, -1 for none.
using AxisMaps = std::unordered_map<const TensorView*, std::vector<int>>;

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
  AxisMaps axis_map;
  // The rank of the iteration space.
  int rank = 0;
  // Transcendental ops per element (sin, exp, tanh, pow...): each is
  // inlined per element with its slow paths, so they set how much code a
  // thread's elements cost NVRTC (PointwiseTuning::heavy_math_budget).
  int heavy_math_ops = 0;
};

// The analysis, or nullopt with the reason in `why_not` when the fusion has
// exprs the pointwise kernel cannot run (reductions, complex or float8
// values, outputs broadcast against the others...).
std::optional<PointwiseAnalysis> analyze_pointwise(const Fusion& fusion, std::string* why_not);

// The tensors a one-pass kernel writes: the fusion's outputs that are not
// inputs, each once, all of one rank and broadcast pattern and without
// constant sizes that differ (the first defines the iteration space), none
// expanded; nullopt with the reason.
std::optional<std::vector<const TensorView*>> iteration_outputs(
    const Fusion& fusion, std::string* why_not);

// Records `map` for `tv`; false when `tv` has another one already. Maps
// that differ only on size-1 broadcast axes agree: such an axis holds one
// element, read with stride 0 whatever axis it maps to, so it is left
// unmapped (-1). A per-row [N, 1] value that is both expanded to the
// reference and used as a row ([N, 1] -> pow -> squeeze) reaches it so.
bool assign_axis_map(AxisMaps& maps, const TensorView* tv, const std::vector<int>& map);

// Walks `exprs` (producers first) from the last, giving each tensor operand
// of an expr whose result has a map the axes it maps to (operand_axis_map);
// reductions and a gather's source are skipped (the reduction analysis
// anchors them). False, with
// the reason, when ranks do not line up or a tensor gets two maps.
bool propagate_axis_maps(const std::vector<Expr*>& exprs, AxisMaps& maps, std::string* why_not);

// Walking from a result to its operands: the axes `operand` of `expr`
// (pointwise, cast, broadcast, expand, squeeze, a gather's index) maps to,
// given its result's map — the same positions, minus the axes a broadcast
// inserts, plus -1 at the axes a squeeze removes; none for a 0-d
// operand. nullopt when the ranks do not line up.
std::optional<std::vector<int>> operand_axis_map(
    const Expr& expr, const TensorView& operand, const std::vector<int>& result_map);

// The element types the generated code handles.
bool is_codegen_dtype(DataType dtype);

// PointwiseOp, CastOp, BroadcastOp and ExpandOp: what the pointwise
// kernel computes (the other kernels compute them too).
bool is_elementwise_expr(const Expr& expr);

// False, with the reason, when `expr` makes values of a type the generated
// code does not handle.
bool makes_codegen_values(const Expr& expr, std::string* why_not);

}  // namespace nvfuse
