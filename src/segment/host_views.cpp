#include "segment/host_views.h"

#include <unordered_map>

#include "ir/all_exprs.h"
#include "schedule/pointwise_analysis.h"
#include "segment/aten_segmenter.h"

namespace nvfuse {

namespace {

bool is_broadcast_view(const Expr& expr) {
  return expr.kind() == ExprKind::BroadcastOp || expr.kind() == ExprKind::ExpandOp;
}

class HostViewFinder {
 public:
  HostViewFinder(const Fusion& fusion, FusionReductions reductions)
      : fusion_(fusion),
        reductions_(reductions),
        has_reduction_(reductions.sets != FusionReductions::kNone),
        pointwise_but_permutes_(is_pointwise_but_permutes(fusion)) {}

  std::unordered_set<const Expr*> run() {
    std::vector<const Expr*> exprs;
    for (const Expr* expr : fusion_.exprs()) {
      if (expr->output(0)->is<TensorView>()) {
        exprs.push_back(expr);
      }
    }
    for (const Expr* expr : exprs) {
      if (!has_own_layout(expr) && is_source(expr->input(0)) &&
          ((is_view_expr(*expr) &&
               (expr->kind() == ExprKind::ReshapeOp || has_reduction_ ||
                   (expr->kind() == ExprKind::PermuteOp && pointwise_but_permutes_))) ||
              ((is_view_expr(*expr) || is_broadcast_view(*expr)) &&
                  reaches_only_sinks(expr->output(0))))) {
        host_.insert(expr);
      }
    }
    for (auto it = exprs.rbegin(); it != exprs.rend(); ++it) {
      const Expr* expr = *it;
      if (is_view_expr(*expr) && !host_.count(expr) && !has_own_layout(expr) &&
          expr->kind() != ExprKind::SliceOp && used_only_on_host(expr->output(0))) {
        host_.insert(expr);
      }
    }
    return std::move(host_);
  }

 private:
  // Every tensor expr is elementwise, a squeeze or a permute: with the
  // permutes of its sources on the host, the kernel is a pointwise one,
  // which the transpose scheduler tiles so that the permuted tensor is read
  // coalesced (the coordinate kernel would read it element by element).
  static bool is_pointwise_but_permutes(const Fusion& fusion) {
    for (const Expr* expr : fusion.exprs()) {
      if (expr->output(0)->is<TensorView>() && !is_elementwise_expr(*expr) &&
          expr->kind() != ExprKind::PermuteOp && expr->kind() != ExprKind::SqueezeOp) {
        return false;
      }
    }
    return true;
  }

  // An output given a stride_order is written in that layout, not viewed.
  bool has_own_layout(const Expr* expr) const {
    const auto* out = expr->output(0)->as<TensorView>();
    return fusion_.is_output(out) && out->domain().has_allocation();
  }

  // An expr cut out of the kernels as an ATen call (matmul, attention,
  // index_put...; next to reductions, a gather or random op too): its
  // inputs and outputs are materialized tensors. A scatter counts as one
  // too: its result is, and a view of an input it reads costs its kernel
  // nothing (the input it writes over is copied, whatever its strides).
  bool is_aten_call(const Expr& expr) const {
    return !is_view_expr(expr) && (is_cut_out(expr, reductions_) || expr.is<ScatterOp>());
  }

  bool is_source(const Val* tv) const {
    const Expr* def = tv->definition();
    return def == nullptr || fusion_.is_input(tv) || host_.count(def) || is_aten_call(*def);
  }

  // Every use is an ATen call or a view whose result again reaches only
  // ATen calls and fusion outputs. (Broadcasts only count here: a kernel
  // broadcasts for free, and a stride-0 input can cost it vectorization.)
  bool reaches_only_sinks(const Val* tv) {
    if (auto it = reaches_only_sinks_.find(tv); it != reaches_only_sinks_.end()) {
      return it->second;
    }
    bool only_sinks = true;
    for (const Expr* use : tv->uses()) {
      only_sinks = only_sinks &&
          (is_aten_call(*use) ||
              ((is_view_expr(*use) || is_broadcast_view(*use)) &&
                  reaches_only_sinks(use->output(0))));
    }
    reaches_only_sinks_[tv] = only_sinks;
    return only_sinks;
  }

  bool used_only_on_host(const Val* tv) const {
    if (tv->uses().empty() && !fusion_.is_output(tv)) {
      return false;
    }
    for (const Expr* use : tv->uses()) {
      if (!is_aten_call(*use) && !host_.count(use)) {
        return false;
      }
    }
    return true;
  }

  const Fusion& fusion_;
  const FusionReductions reductions_;
  const bool has_reduction_;
  const bool pointwise_but_permutes_;
  std::unordered_set<const Expr*> host_;
  std::unordered_map<const Val*, bool> reaches_only_sinks_;
};

}  // namespace

bool is_view_expr(const Expr& expr) {
  switch (expr.kind()) {
    case ExprKind::SliceOp:
    case ExprKind::PermuteOp:
    case ExprKind::SqueezeOp:
    case ExprKind::ReshapeOp:
      return true;
    default:
      return false;
  }
}

std::unordered_set<const Expr*> find_host_views(const Fusion& fusion, FusionReductions reductions) {
  return HostViewFinder(fusion, reductions).run();
}

}  // namespace nvfuse
