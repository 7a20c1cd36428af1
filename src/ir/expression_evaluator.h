// Evaluates scalar Vals (extents, shape arithmetic, symbolic inputs) from
// bound values, without torch. Used to check input sizes against the
// definition and, later, by heuristics that need concrete sizes.
#pragma once

#include <optional>
#include <unordered_map>
#include <vector>

#include "ir/op_table.h"
#include "ir/scalar.h"

namespace nvfuse {

class ExpressionEvaluator {
 public:
  void bind(const Scalar* scalar, ScalarValue value);
  bool is_bound(const Scalar* scalar) const { return known_.count(scalar); }
  // The value of `scalar`: a constant, a bound value, or computed through its
  // definition. nullopt when something it depends on is unbound or its
  // arithmetic is not supported here.
  std::optional<ScalarValue> evaluate(const Scalar* scalar);

 private:
  std::unordered_map<const Scalar*, ScalarValue> known_;
};

// Scalar arithmetic for the ops that shapes use (add, sub, mul, div,
// ceil_div, mod, min/max, comparisons, logical ops...), in the kind of
// `out_dtype`. nullopt for ops it does not cover.
std::optional<ScalarValue> evaluate_scalar_op(
    OpType op, const std::vector<ScalarValue>& operands, DataType out_dtype);

}  // namespace nvfuse
