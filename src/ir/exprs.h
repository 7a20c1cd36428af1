// The Expr kinds. Each is a thin typed view over ExprFields; constructors
// take ExprFields so that cloning is generic, and `make` builds one from
// typed arguments.
#pragma once

#include <vector>

#include "ir/iter_domain.h"
#include "ir/statement.h"
#include "ir/tensor_view.h"

namespace nvfuse {

// The kind tag and the constructor every Expr kind class has (also used by
// the sibling headers listed in all_exprs.h).
#define NVFUSE_EXPR_BOILERPLATE(Kind)                   \
  static constexpr ExprKind kExprKind = ExprKind::Kind; \
  Kind(Fusion* fusion, ExprFields fields) : Expr(fusion, ExprKind::Kind, std::move(fields)) {}

// out = op(inputs...), elementwise over tensors and/or scalars. Operands are
// already promoted (tensors cast) to the op's compute type.
class PointwiseOp : public Expr {
 public:
  NVFUSE_EXPR_BOILERPLATE(PointwiseOp)
  static PointwiseOp* make(Val* out, OpType op, std::vector<Val*> inputs);
  OpType op() const { return attribute<OpType>(0); }
};

// out = in converted to out's dtype.
class CastOp : public Expr {
 public:
  NVFUSE_EXPR_BOILERPLATE(CastOp)
  static CastOp* make(Val* out, Val* in);
};

// Inserts size-1 broadcast axes into `in` where is_broadcast_dim is true.
class BroadcastOp : public Expr {
 public:
  NVFUSE_EXPR_BOILERPLATE(BroadcastOp)
  static BroadcastOp* make(TensorView* out, TensorView* in, std::vector<bool> is_broadcast_dim);
  const std::vector<bool>& is_broadcast_dim() const { return attribute<std::vector<bool>>(0); }
};

// Expands broadcast axes of `in` to the given extents (inputs 1..rank).
class ExpandOp : public Expr {
 public:
  NVFUSE_EXPR_BOILERPLATE(ExpandOp)
  static ExpandOp* make(TensorView* out, TensorView* in, const std::vector<Scalar*>& shape);
};

// out = fold of `in` over `axes` with a binary op: add (sum), mul (prod),
// maximum (max), minimum (min). The reduced axes are absent from out.
class ReductionOp : public Expr {
 public:
  NVFUSE_EXPR_BOILERPLATE(ReductionOp)
  static ReductionOp* make(TensorView* out, TensorView* in, OpType op, std::vector<int64_t> axes);
  OpType op() const { return attribute<OpType>(0); }
  const std::vector<int64_t>& axes() const { return attribute<std::vector<int64_t>>(1); }
};

// "sum", "prod", "max", "min" for a ReductionOp's op.
const char* reduction_name(OpType op);

// (var, mean) of `in` over `axes`; var divides by N - correction.
class VarMeanOp : public Expr {
 public:
  NVFUSE_EXPR_BOILERPLATE(VarMeanOp)
  static VarMeanOp* make(TensorView* var, TensorView* mean, TensorView* in,
      std::vector<int64_t> axes, int64_t correction);
  const std::vector<int64_t>& axes() const { return attribute<std::vector<int64_t>>(0); }
  int64_t correction() const { return attribute<int64_t>(1); }
};

// A ReductionOp or a VarMeanOp, and the axes it reduces.
bool is_reduction(const Expr* expr);
const std::vector<int64_t>& reduced_axes_of(const Expr& reduction);

// in -> (outer, inner). Inner split: inner has extent `factor`; outer
// split: outer has extent `factor`.
class Split : public Expr {
 public:
  NVFUSE_EXPR_BOILERPLATE(Split)
  static Split* make(
      IterDomain* outer, IterDomain* inner, IterDomain* in, Scalar* factor, bool inner_split);
  bool inner_split() const { return attribute<bool>(0); }
};

// (outer, inner) -> out with extent outer * inner.
class Merge : public Expr {
 public:
  NVFUSE_EXPR_BOILERPLATE(Merge)
  static Merge* make(IterDomain* out, IterDomain* outer, IterDomain* inner);
};

}  // namespace nvfuse
