// Where each logical axis of an expr's input goes in its output: the map
// sharding propagation and resharding lowering both follow. An axis either
// becomes an output axis, or is summed away (reduced or contracted: its
// shards then hold partial results that a collective must combine), or
// disappears without a sum (a squeezed broadcast).
#pragma once

#include <optional>
#include <vector>

#include "ir/fusion.h"
#include "ir/op_table.h"

namespace nvfuse {

struct AxisFlow {
  // Per input axis: the output axis it becomes, or -1.
  std::vector<int64_t> to_output;
  // Per input axis: true when it is summed away (combined with `combine`).
  std::vector<bool> summed;
  OpType combine = OpType::add;
};

// The flow of tensor input `input` of `expr` into output 0; nullopt for the
// exprs sharding does not follow yet (reshape, indexing, attention...).
std::optional<AxisFlow> axis_flow(const Expr& expr, size_t input);

}  // namespace nvfuse
