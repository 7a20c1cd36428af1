// Elementwise op constructors: type promotion, implicit broadcasting of
// lower-rank tensors (numpy style, leading axes), and the extent equalities
// that the combined axes imply.
#pragma once

#include <vector>

#include "ir/op_table.h"
#include "ir/statement.h"
#include "ir/tensor_view.h"

namespace nvfuse {

// out = op(operands...). Returns a TensorView when any operand is a tensor,
// else a Scalar.
Val* pointwise(OpType op, std::vector<Val*> operands);

// `value` converted to `dtype` (a new Val even when the dtype is unchanged).
Val* cast(Val* value, DataType dtype);

}  // namespace nvfuse
