// Expr kinds that order values along an axis: topk and argsort. No
// generated kernel sorts; both run as ATen calls (torch's radix and
// bitonic sorts), cut out of the kernels around them.
#pragma once

#include "ir/exprs.h"

namespace nvfuse {

// torch.topk: inputs in, k (an integer Scalar); outputs values (in's
// dtype) and indices (Int), with k elements along dim.
class TopkOp : public Expr {
 public:
  NVFUSE_EXPR_BOILERPLATE(TopkOp)
  int64_t dim() const { return attribute<int64_t>(0); }
  bool largest() const { return attribute<bool>(1); }
  bool sorted() const { return attribute<bool>(2); }
};

// torch.argsort: the Int positions that sort `in` along dim.
class ArgsortOp : public Expr {
 public:
  NVFUSE_EXPR_BOILERPLATE(ArgsortOp)
  int64_t dim() const { return attribute<int64_t>(0); }
  bool descending() const { return attribute<bool>(1); }
  bool stable() const { return attribute<bool>(2); }
};

}  // namespace nvfuse
