// Expr kinds that address elements by index tensors or by position: select,
// index_select, gather/take_along_axis, scatter, index_put_accumulate,
// embedding, triu and cumsum.
#pragma once

#include "ir/exprs.h"

namespace nvfuse {

// out = in.select(dim, index); inputs: in, index (an integer Scalar).
class SelectOp : public Expr {
 public:
  NVFUSE_EXPR_BOILERPLATE(SelectOp)
  int64_t dim() const { return attribute<int64_t>(0); }
};

// out = in.index_select(dim, index); index is a 1-D integer tensor.
class IndexSelectOp : public Expr {
 public:
  NVFUSE_EXPR_BOILERPLATE(IndexSelectOp)
  int64_t dim() const { return attribute<int64_t>(0); }
};

// out[..i..] = in[..index[..i..]..] along dim. take_along_axis broadcasts
// index and input against each other in the other axes (torch.take_along_dim);
// gather takes index's shape (torch.gather).
class GatherOp : public Expr {
 public:
  NVFUSE_EXPR_BOILERPLATE(GatherOp)
  int64_t dim() const { return attribute<int64_t>(0); }
  bool take_along_axis() const { return attribute<bool>(1); }
};

// out = in.scatter(dim, index, src); inputs: in, index, src.
class ScatterOp : public Expr {
 public:
  NVFUSE_EXPR_BOILERPLATE(ScatterOp)
  int64_t dim() const { return attribute<int64_t>(0); }
};

// out = acc with value's rows added at rows `index` (1-D) of axis 0,
// duplicates accumulating: acc.index_put((index,), value, accumulate=True).
class IndexPutAccumulateOp : public Expr {
 public:
  NVFUSE_EXPR_BOILERPLATE(IndexPutAccumulateOp)
};

// out = weight[indices]: rows of the 2-D weight; inputs: indices, weight.
class EmbeddingFwdOp : public Expr {
 public:
  NVFUSE_EXPR_BOILERPLATE(EmbeddingFwdOp)
};

// The upper triangle of the last two axes (others zero); inputs: in,
// diagonal (an integer Scalar, as torch.triu's).
class TriuOp : public Expr {
 public:
  NVFUSE_EXPR_BOILERPLATE(TriuOp)
};

// Inclusive prefix sums along dim.
class CumsumOp : public Expr {
 public:
  NVFUSE_EXPR_BOILERPLATE(CumsumOp)
  int64_t dim() const { return attribute<int64_t>(0); }
};

}  // namespace nvfuse
