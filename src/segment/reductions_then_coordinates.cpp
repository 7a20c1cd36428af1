#include "segment/reductions_then_coordinates.h"

#include <unordered_set>

#include "ir/all_exprs.h"

namespace nvfuse {

std::optional<ReductionsThenRest> split_reductions_from_rest(const Fusion& fusion) {
  std::vector<const Expr*> exprs;
  for (const Expr* expr : fusion.exprs()) {
    if (expr->output(0)->is<TensorView>()) {
      exprs.push_back(expr);
    }
  }
  // Walking back from the last expr, a reduction's readers are seen first.
  std::unordered_set<const Expr*> feeds_a_reduction;
  for (size_t i = exprs.size(); i-- > 0;) {
    bool feeds = is_reduction(exprs[i]);
    for (const Val* out : exprs[i]->outputs()) {
      for (const Expr* use : out->uses()) {
        feeds = feeds || feeds_a_reduction.count(use) > 0;
      }
    }
    if (feeds) {
      feeds_a_reduction.insert(exprs[i]);
    }
  }
  ReductionsThenRest split;
  for (const Expr* expr : exprs) {
    (feeds_a_reduction.count(expr) ? split.reductions : split.rest).push_back(expr);
  }
  if (split.reductions.empty() || split.rest.empty()) {
    return std::nullopt;
  }
  return split;
}

}  // namespace nvfuse
