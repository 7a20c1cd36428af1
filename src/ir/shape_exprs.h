// Expr kinds that rearrange elements without computing new values: reshape,
// permute, squeeze, slice, pad and cat. Extents of their outputs are Scalars
// (folded when constant), so later exprs and the runtime can check and
// compute shapes.
#pragma once

#include "ir/exprs.h"

namespace nvfuse {

// out = in.reshape(sizes); inputs: in, then one Scalar per output axis.
class ReshapeOp : public Expr {
 public:
  NVFUSE_EXPR_BOILERPLATE(ReshapeOp)
};

// out axis i = in axis dims[i].
class PermuteOp : public Expr {
 public:
  NVFUSE_EXPR_BOILERPLATE(PermuteOp)
  const std::vector<int64_t>& dims() const { return attribute<std::vector<int64_t>>(0); }
};

// Removes the size-1 axes `dims` (sorted).
class SqueezeOp : public Expr {
 public:
  NVFUSE_EXPR_BOILERPLATE(SqueezeOp)
  const std::vector<int64_t>& dims() const { return attribute<std::vector<int64_t>>(0); }
};

// inputs: in, then (start, end, step) per axis, as given (Python semantics:
// negative indices count from the end, out-of-range ones clamp).
class SliceOp : public Expr {
 public:
  NVFUSE_EXPR_BOILERPLATE(SliceOp)
};

// inputs: in, the pad value, then (before, after) per axis in axis order;
// negative widths crop, as torch.nn.functional.pad.
class PadOp : public Expr {
 public:
  NVFUSE_EXPR_BOILERPLATE(PadOp)
};

// Concatenation of the input tensors along `dim`.
class CatOp : public Expr {
 public:
  NVFUSE_EXPR_BOILERPLATE(CatOp)
  int64_t dim() const { return attribute<int64_t>(0); }
};

}  // namespace nvfuse
