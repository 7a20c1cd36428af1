#include "ir/exprs.h"

#include "ir/creation_exprs.h"
#include "ir/fusion.h"
#include "ir/scalar.h"

namespace nvfuse {

PointwiseOp* PointwiseOp::make(Val* out, OpType op, std::vector<Val*> inputs) {
  NVFUSE_ASSERT_EQ(
      static_cast<int>(inputs.size()), info_of(op).arity, "wrong operand count for ", name_of(op));
  return out->fusion()->create<PointwiseOp>(ExprFields{std::move(inputs), {out}, {{"op", op}}});
}

CastOp* CastOp::make(Val* out, Val* in) {
  return out->fusion()->create<CastOp>(ExprFields{{in}, {out}, {}});
}

BroadcastOp* BroadcastOp::make(
    TensorView* out, TensorView* in, std::vector<bool> is_broadcast_dim) {
  return out->fusion()->create<BroadcastOp>(
      ExprFields{{in}, {out}, {{"is_broadcast_dim", std::move(is_broadcast_dim)}}});
}

ExpandOp* ExpandOp::make(TensorView* out, TensorView* in, const std::vector<Scalar*>& shape) {
  std::vector<Val*> inputs = {in};
  inputs.insert(inputs.end(), shape.begin(), shape.end());
  return out->fusion()->create<ExpandOp>(ExprFields{std::move(inputs), {out}, {}});
}

ReductionOp* ReductionOp::make(
    TensorView* out, TensorView* in, OpType op, std::vector<int64_t> axes) {
  return out->fusion()->create<ReductionOp>(
      ExprFields{{in}, {out}, {{"op", op}, {"axes", std::move(axes)}}});
}

const char* reduction_name(OpType op) {
  switch (op) {
    case OpType::add:
      return "sum";
    case OpType::mul:
      return "prod";
    case OpType::maximum:
      return "max";
    case OpType::minimum:
      return "min";
    default:
      NVFUSE_ASSERT(false, name_of(op), " is not a reduction op");
  }
  return "";
}

VarMeanOp* VarMeanOp::make(TensorView* var, TensorView* mean, TensorView* in,
    std::vector<int64_t> axes, int64_t correction) {
  return var->fusion()->create<VarMeanOp>(
      ExprFields{{in}, {var, mean}, {{"axes", std::move(axes)}, {"correction", correction}}});
}

Split* Split::make(
    IterDomain* outer, IterDomain* inner, IterDomain* in, Scalar* factor, bool inner_split) {
  return in->fusion()->create<Split>(
      ExprFields{{in, factor}, {outer, inner}, {{"inner_split", inner_split}}});
}

Merge* Merge::make(IterDomain* out, IterDomain* outer, IterDomain* inner) {
  return out->fusion()->create<Merge>(ExprFields{{outer, inner}, {out}, {}});
}

bool is_reduction(const Expr* expr) { return expr->is<ReductionOp>() || expr->is<VarMeanOp>(); }

const std::vector<int64_t>& reduced_axes_of(const Expr& reduction) {
  NVFUSE_ASSERT(is_reduction(&reduction), "not a reduction");
  return reduction.is<ReductionOp>() ? reduction.as<ReductionOp>()->axes()
                                     : reduction.as<VarMeanOp>()->axes();
}

namespace {

bool is_constant_equal(const Val* v, double expected) {
  if (!v->is<Scalar>() || !v->as<Scalar>()->is_constant()) {
    return false;
  }
  const ScalarValue& value = v->as<Scalar>()->value();
  return !value.is_complex() && value.as_double() == expected;
}

}  // namespace

bool RngOp::is_unit_uniform() const {
  return !is_normal() && output(0)->dtype() != DataType::Double &&
      is_constant_equal(input(0), 0.0) && is_constant_equal(input(1), 1.0);
}

bool RngOp::passes_by_value(size_t i) const {
  if (i >= first_size_input() || !input(i)->is<Scalar>() ||
      !input(i)->as<Scalar>()->is_constant()) {
    return false;
  }
  return i >= 2 || !is_unit_uniform();
}

bool constant_passed_by_value(const Expr& expr, size_t i) {
  return expr.is<RngOp>() && expr.as<RngOp>()->passes_by_value(i);
}

}  // namespace nvfuse
