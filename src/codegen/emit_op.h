// CUDA C++ for one pointwise op. The counterpart of apply_pointwise (the
// ATen reference): each op means exactly what torch's CUDA kernel computes.
#pragma once

#include <string>
#include <vector>

#include "ir/data_type.h"
#include "ir/op_table.h"
#include "ir/scalar_value.h"

namespace nvfuse {

// The expression of `op` on `operands`, which are already expressions in
// the op's math type `math` (Float, Double, Int, Int32 or Bool; `where`'s
// condition is Bool). The result is in `math`, or bool for comparisons.
std::string emit_pointwise(OpType op, const std::vector<std::string>& operands, DataType math);

// A constant as an expression of type `math`.
std::string emit_constant(const ScalarValue& value, DataType math);

}  // namespace nvfuse
