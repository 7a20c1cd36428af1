// matmul and linear, with torch's shape rules and result dtype (the
// operands' common floating-point dtype).
#pragma once

#include "ir/tensor_view.h"

namespace nvfuse {

TensorView* matmul(TensorView* a, TensorView* b);
// bias may be nullptr.
TensorView* linear(TensorView* in, TensorView* weight, TensorView* bias);

}  // namespace nvfuse
