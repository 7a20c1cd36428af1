#include "schedule/value_signs.h"

#include <algorithm>

namespace nvfuse {

namespace {

const Expr* pointwise_def(const Val* v, OpType op) {
  const Expr* def = v->definition();
  return def != nullptr && def->is<PointwiseOp>() && def->as<PointwiseOp>()->op() == op ? def
                                                                                        : nullptr;
}

// The max of v == broadcast(max(y)) re-expanded over exactly the axes the
// max reduced, else nullptr.
const Expr* broadcast_max_of(const Val* v, const Val* y) {
  const Expr* broadcast = v->definition();
  if (broadcast == nullptr || !broadcast->is<BroadcastOp>()) {
    return nullptr;
  }
  const Expr* max = broadcast->input(0)->definition();
  if (max == nullptr || !max->is<ReductionOp>() ||
      max->as<ReductionOp>()->op() != OpType::maximum || max->input(0) != y) {
    return nullptr;
  }
  const std::vector<bool>& expanded = broadcast->as<BroadcastOp>()->is_broadcast_dim();
  const std::vector<int64_t>& axes = max->as<ReductionOp>()->axes();
  for (size_t i = 0; i < expanded.size(); ++i) {
    const bool reduced = std::find(axes.begin(), axes.end(), int64_t(i)) != axes.end();
    if (expanded[i] != reduced) {
      return nullptr;
    }
  }
  return max;
}

// The max of v == y - broadcast(max(y)), else nullptr.
const Expr* max_shifting(const Val* v) {
  const Expr* sub = pointwise_def(v, OpType::sub);
  if (sub == nullptr || !sub->input(0)->is<TensorView>() || !sub->input(1)->is<TensorView>()) {
    return nullptr;
  }
  return broadcast_max_of(sub->input(1), sub->input(0));
}

}  // namespace

bool is_never_positive(const Val* v) {
  if (max_shifting(v) != nullptr) {
    return true;
  }
  const Expr* sub = pointwise_def(v, OpType::sub);
  return sub != nullptr && is_never_positive(sub->input(0)) && is_never_negative(sub->input(1));
}

bool is_never_negative(const Val* v) {
  const Expr* def = v->definition();
  if (def != nullptr && def->is<BroadcastOp>()) {
    return is_never_negative(def->input(0));
  }
  const Expr* log = pointwise_def(v, OpType::log);
  return log != nullptr && is_at_least_one(log->input(0));
}

bool is_at_least_one(const Val* v) {
  const Expr* sum = v->definition();
  if (sum != nullptr && sum->is<BroadcastOp>()) {
    return is_at_least_one(sum->input(0));
  }
  if (sum == nullptr || !sum->is<ReductionOp>() || sum->as<ReductionOp>()->op() != OpType::add) {
    return false;
  }
  // Over the max's axes: then each sum has its max's term, exp(0) = 1.
  const Expr* exp = pointwise_def(sum->input(0), OpType::exp);
  const Expr* max = exp == nullptr ? nullptr : max_shifting(exp->input(0));
  return max != nullptr && max->as<ReductionOp>()->axes() == sum->as<ReductionOp>()->axes();
}

}  // namespace nvfuse
