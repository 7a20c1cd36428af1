// Expr kinds that run as ATen calls (cuBLAS) rather than generated code:
// matmul and linear.
#pragma once

#include "ir/exprs.h"

namespace nvfuse {

#define NVFUSE_MATMUL_EXPR(Kind)                        \
  static constexpr ExprKind kExprKind = ExprKind::Kind; \
  Kind(Fusion* fusion, ExprFields fields)               \
      : Expr(fusion, ExprKind::Kind, std::move(fields)) {}

// torch.matmul(a, b), including its 1-D and batched-broadcast rules.
class MatmulOp : public Expr {
 public:
  NVFUSE_MATMUL_EXPR(MatmulOp)
};

// torch.nn.functional.linear(in, weight[, bias]): in @ weight.T + bias.
class LinearOp : public Expr {
 public:
  NVFUSE_MATMUL_EXPR(LinearOp)
  bool has_bias() const { return inputs().size() == 3; }
};

#undef NVFUSE_MATMUL_EXPR

}  // namespace nvfuse
