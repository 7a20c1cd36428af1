#include "passes/squeeze_trivial_reductions.h"

#include "ir/fusion.h"
#include "ops/shape.h"

namespace nvfuse {

namespace {

// Every reduced axis holds one element in memory and in the logical shape
// (an expanded broadcast repeats its element: summing it is no identity).
bool reduces_only_size_one_axes(const ReductionOp& reduction) {
  const auto* in = reduction.input(0)->as<TensorView>();
  for (int64_t axis : reduction.axes()) {
    const IterDomain* id = in->logical()[axis];
    if (id->is_expanded() || !id->logical_extent()->is_constant_int(1)) {
      return false;
    }
  }
  return !reduction.axes().empty();
}

}  // namespace

void squeeze_trivial_reductions(Fusion& fusion) {
  // Last to first: replacing an output's uses destroys the exprs that read
  // it, all later than this one, so the walk never meets a destroyed expr.
  const std::vector<Expr*> exprs = fusion.exprs();
  for (auto it = exprs.rbegin(); it != exprs.rend(); ++it) {
    Expr* expr = *it;
    if (!expr->is<ReductionOp>()) {
      continue;
    }
    const auto& reduction = *expr->as<ReductionOp>();
    if (!reduces_only_size_one_axes(reduction)) {
      continue;
    }
    auto* in = reduction.input(0)->as<TensorView>();
    // reduce() cast the input to the result's dtype already.
    TensorView* squeezed = squeeze(in, reduction.axes());
    fusion.replace_all_uses(reduction.output(0), squeezed);
  }
}

}  // namespace nvfuse
