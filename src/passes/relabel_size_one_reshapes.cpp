#include "passes/relabel_size_one_reshapes.h"

#include "ir/all_exprs.h"
#include "ir/fusion.h"
#include "ops/broadcast.h"
#include "ops/shape.h"

namespace nvfuse {

namespace {

bool is_size_one(const IterDomain* id) {
  return !id->is_expanded() && (id->is_broadcast() || id->logical_extent()->is_constant_int(1));
}

bool same_extent(const Scalar* a, const Scalar* b) {
  const auto x = a->constant_int();
  const auto y = b->constant_int();
  return a == b || (x.has_value() && y.has_value() && *x == *y);
}

// The axes of `tv` that are not of size 1, in order.
std::vector<int64_t> sized_axes(const TensorView* tv) {
  std::vector<int64_t> axes;
  for (int64_t axis = 0; axis < tv->rank(); ++axis) {
    if (!is_size_one(tv->logical()[axis])) {
      axes.push_back(axis);
    }
  }
  return axes;
}

// Whether `in` and `out` have the same sizes once their size-1 axes are
// left out.
bool differ_only_in_size_one_axes(const TensorView* in, const TensorView* out) {
  const std::vector<int64_t> a = sized_axes(in);
  const std::vector<int64_t> b = sized_axes(out);
  if (a.size() != b.size()) {
    return false;
  }
  for (size_t k = 0; k < a.size(); ++k) {
    if (!same_extent(
            in->logical()[a[k]]->logical_extent(), out->logical()[b[k]]->logical_extent())) {
      return false;
    }
  }
  return true;
}

// squeeze(in, ...) when `out` drops only size-1 axes of `in`, broadcast(in,
// ...) when it adds only size-1 axes; nullptr otherwise.
TensorView* relabeling_of(TensorView* in, const TensorView* out) {
  const std::vector<int64_t> kept = sized_axes(in);
  if (static_cast<int64_t>(sized_axes(out).size()) == out->rank()) {
    std::vector<int64_t> dropped;
    for (int64_t axis = 0; axis < in->rank(); ++axis) {
      if (is_size_one(in->logical()[axis])) {
        dropped.push_back(axis);
      }
    }
    return dropped.empty() ? nullptr : squeeze(in, dropped);
  }
  if (static_cast<int64_t>(kept.size()) == in->rank()) {
    std::vector<bool> added(out->rank());
    for (int64_t axis = 0; axis < out->rank(); ++axis) {
      added[axis] = is_size_one(out->logical()[axis]);
    }
    return broadcast(in, added);
  }
  return nullptr;
}

}  // namespace

void relabel_size_one_reshapes(Fusion& fusion) {
  // Last to first: replacing an output's uses destroys the exprs that read
  // it, all later than this one, so the walk never meets a destroyed expr.
  const std::vector<Expr*> exprs = fusion.exprs();
  for (auto it = exprs.rbegin(); it != exprs.rend(); ++it) {
    Expr* expr = *it;
    if (!expr->is<ReshapeOp>()) {
      continue;
    }
    auto* in = expr->input(0)->as<TensorView>();
    auto* out = expr->output(0)->as<TensorView>();
    if (out->domain().has_allocation() || !differ_only_in_size_one_axes(in, out)) {
      continue;  // an output laid out by the user keeps its reshape
    }
    if (TensorView* relabeled = relabeling_of(in, out)) {
      fusion.replace_all_uses(out, relabeled);
    }
  }
}

}  // namespace nvfuse
