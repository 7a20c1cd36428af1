// One tensor expr of a fusion as one CUDA C++ statement on per-element (or
// per-row) values: `const float t4 = (t2 + t3);  // T4 = add(T2, T3)`. Shared
// by the pointwise and reduction code generators, whose skeletons decide
// where the operands come from.
#pragma once

#include <functional>
#include <string>

#include "ir/fusion.h"

namespace nvfuse {

// The generated name of a value: t3 for tensor T3, the scalar's own name
// (i2, d5) for a symbolic scalar.
std::string name_of_value(const Val* v);

// The value `expr` (PointwiseOp, CastOp, BroadcastOp or ExpandOp) computes,
// as a CUDA expression of its output's type; `text_of(v)` is the text of a
// non-constant operand (constants are printed in the math type).
std::string expr_value(const Expr& expr, const std::function<std::string(const Val*)>& text_of);

// `is_value_input(v)`: v is read from the kernel's Args (`args.<name>`).
// Handles PointwiseOp, CastOp, BroadcastOp and ExpandOp.
std::string expr_statement(const Expr& expr, const std::function<bool(const Val*)>& is_value_input);

}  // namespace nvfuse
