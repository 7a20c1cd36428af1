// torch's result-type rules for mixes of tensors and scalars.
#pragma once

#include <vector>

#include "ir/data_type.h"
#include "ir/op_table.h"
#include "ir/statement.h"

namespace nvfuse {

// torch.result_type over `operands`: tensors with dimensions outrank 0-d
// tensors, which outrank scalars; a lower tier only raises the category
// (a float scalar turns an int tensor into Float, the default dtype, but
// does not widen a Half tensor). With no tensor operand, plain promotion.
// `tensor_result`: the op returns a tensor although no operand here is one
// (where's values beside a tensor condition); the scalars then count as
// Python numbers, so torch.where(cond, 1.5, -2.0) is Float, not Double.
DataType result_type(const std::vector<Val*>& operands, bool tensor_result = false);

// The dtype an op computes in, given its operands' result type.
DataType compute_type_of(const OpInfo& info, DataType common);
// The dtype an op returns, given its compute type.
DataType output_type_of(const OpInfo& info, DataType compute);

class PointwiseOp;
// The dtype a built op computes in (before half types widen to float): the
// promotion of its promoted operands. The op constructor cast tensor operands
// to it, so this gives back what was decided when the op was built; every
// backend reads it here.
DataType compute_type_of(const PointwiseOp& op);

}  // namespace nvfuse
