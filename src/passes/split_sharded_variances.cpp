#include "passes/split_sharded_variances.h"

#include "ir/all_exprs.h"
#include "ir/extent_arith.h"
#include "ir/sharding.h"
#include "ops/broadcast.h"
#include "ops/pointwise.h"
#include "ops/reduction.h"
#include "passes/propagate_shardings.h"

namespace nvfuse {

namespace {

bool reduces_a_sharded_axis(const VarMeanOp& op) {
  const auto& in = *op.input(0)->as<TensorView>();
  if (!in.device_mesh().has_value() || is_complex(in.dtype())) {
    return false;
  }
  const Sharding sharding = sharding_of(in);
  for (int64_t axis : op.axes()) {
    if (sharding.mesh_axis[axis] >= 0) {
      return true;
    }
  }
  return false;
}

// `value` as a fresh tensor distributed as `like` (the output it replaces).
TensorView* distributed_as(Val* value, DataType dtype, const TensorView& like) {
  auto* out = pointwise(OpType::set, {cast(value, dtype)})->as<TensorView>();
  Sharding sharding = sharding_of(like);
  sharding.whole_axis.assign(sharding.mesh_axis.size(), false);
  apply_sharding(out, sharding);
  return out;
}

void split(Fusion& fusion, VarMeanOp& op) {
  auto* in = op.input(0)->as<TensorView>();
  auto* old_var = op.output(0)->as<TensorView>();
  auto* old_mean = op.output(1)->as<TensorView>();
  const std::vector<int64_t> axes = op.axes();
  const bool half = in->dtype() == DataType::Half || in->dtype() == DataType::BFloat16;
  auto* x = half ? cast(in, DataType::Float)->as<TensorView>() : in;

  Scalar* count = fusion.index_constant(1);
  for (int64_t axis : axes) {
    count = extent_mul(count, in->logical()[axis]->logical_extent());
  }
  TensorView* avg = mean(x, axes, /*keepdim=*/false, DataType::Null);
  std::vector<bool> reduced(in->rank(), false);
  for (int64_t axis : axes) {
    reduced[axis] = true;
  }
  auto* deviation = pointwise(OpType::sub, {x, broadcast(avg, reduced)});
  auto* squares = pointwise(OpType::mul, {deviation, deviation})->as<TensorView>();
  TensorView* sum_of_squares = reduce(OpType::add, squares, axes, false, DataType::Null);
  Scalar* divisor = extent_max(
      extent_sub(count, fusion.index_constant(op.correction())), fusion.index_constant(0));
  Val* var = pointwise(OpType::div, {sum_of_squares, divisor});

  TensorView* new_var = distributed_as(var, old_var->dtype(), *old_var);
  TensorView* new_mean = distributed_as(avg, old_mean->dtype(), *old_mean);
  fusion.replace_all_uses(old_var, new_var);
  fusion.replace_all_uses(old_mean, new_mean);
}

// The first var_mean still to split, or null. A split one is left without
// uses, so exprs() no longer reaches it.
VarMeanOp* next_to_split(const Fusion& fusion) {
  for (Expr* expr : fusion.exprs()) {
    if (expr->is<VarMeanOp>() && reduces_a_sharded_axis(*expr->as<VarMeanOp>())) {
      return static_cast<VarMeanOp*>(expr);
    }
  }
  return nullptr;
}

}  // namespace

void split_sharded_variances(Fusion& fusion) {
  bool changed = false;
  // Rewriting replaces the exprs that use the old outputs: look again
  // after each split rather than walk a list that may hold them.
  while (VarMeanOp* op = next_to_split(fusion)) {
    split(fusion, *op);
    changed = true;
  }
  if (changed) {
    propagate_shardings(fusion);
  }
}

}  // namespace nvfuse
