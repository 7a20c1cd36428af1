// Expr kinds that run as ATen calls (cuBLAS) rather than generated code:
// matmul and linear.
#pragma once

#include "ir/exprs.h"

namespace nvfuse {

// torch.matmul(a, b), including its 1-D and batched-broadcast rules.
class MatmulOp : public Expr {
 public:
  NVFUSE_EXPR_BOILERPLATE(MatmulOp)
};

// torch.nn.functional.linear(in, weight[, bias]): in @ weight.T + bias.
class LinearOp : public Expr {
 public:
  NVFUSE_EXPR_BOILERPLATE(LinearOp)
  bool has_bias() const { return inputs().size() == 3; }
};

}  // namespace nvfuse
