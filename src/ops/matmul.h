// matmul, linear and grouped_mm, with torch's shape rules and result dtype (the
// operands' common floating-point dtype).
#pragma once

#include "ir/tensor_view.h"

namespace nvfuse {

TensorView* matmul(TensorView* a, TensorView* b);
// bias may be nullptr.
TensorView* linear(TensorView* in, TensorView* weight, TensorView* bias);
// torch._grouped_mm (ir/matmul_exprs.h: GroupedMmOp says which axis the
// Int32 end positions `offsets` cut).
TensorView* grouped_mm(TensorView* a, TensorView* b, TensorView* offsets);

}  // namespace nvfuse
