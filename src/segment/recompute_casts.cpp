#include "segment/recompute_casts.h"

#include <algorithm>
#include <unordered_map>

#include "ir/all_exprs.h"

namespace nvfuse {

namespace {

bool reads(const MergedGroup& group, const Val* v) {
  return std::any_of(group.exprs.begin(), group.exprs.end(), [&](const Expr* e) {
    return std::find(e->inputs().begin(), e->inputs().end(), v) != e->inputs().end();
  });
}

bool contains(const MergedGroup& group, const Expr* expr) {
  return std::find(group.exprs.begin(), group.exprs.end(), expr) != group.exprs.end();
}

// A cast of fusion inputs whose result only `exprs` read.
bool is_recomputable_cast(
    const Fusion& fusion, const Expr& expr, const std::unordered_map<const Expr*, size_t>& index) {
  if (!expr.is<CastOp>() || fusion.is_output(expr.output(0))) {
    return false;
  }
  const Val* in = expr.input(0);
  if (!in->is<TensorView>() || in->definition() != nullptr) {
    return false;
  }
  const auto& uses = expr.output(0)->uses();
  return !uses.empty() &&
      std::all_of(uses.begin(), uses.end(), [&](const Expr* use) { return index.count(use) > 0; });
}

// `group` with `expr` among its exprs, in the order of `index`.
std::vector<const Expr*> with_expr(const MergedGroup& group, const Expr* expr,
    const std::unordered_map<const Expr*, size_t>& index) {
  std::vector<const Expr*> result = group.exprs;
  result.push_back(expr);
  std::sort(result.begin(), result.end(),
      [&](const Expr* a, const Expr* b) { return index.at(a) < index.at(b); });
  return result;
}

}  // namespace

std::vector<MergedGroup> recompute_input_casts(const Fusion& fusion,
    const std::vector<const Expr*>& exprs, std::vector<MergedGroup> groups,
    const GroupCheck& accepts, std::unordered_set<const Expr*>& recomputed) {
  std::unordered_map<const Expr*, size_t> index;
  for (size_t i = 0; i < exprs.size(); ++i) {
    index[exprs[i]] = i;
  }
  for (const Expr* cast : exprs) {
    if (!is_recomputable_cast(fusion, *cast, index)) {
      continue;
    }
    const Val* value = cast->output(0);
    // Every reader that lacks the cast must take it, or none does: a value
    // some segment still reads must be written.
    std::vector<size_t> readers;
    bool all_take_it = true;
    for (size_t g = 0; g < groups.size() && all_take_it; ++g) {
      if (contains(groups[g], cast) || !reads(groups[g], value)) {
        continue;
      }
      readers.push_back(g);
      all_take_it = groups[g].accepted && accepts(with_expr(groups[g], cast, index));
    }
    if (!all_take_it || readers.empty()) {
      continue;
    }
    for (size_t g : readers) {
      groups[g].exprs = with_expr(groups[g], cast, index);
    }
    for (MergedGroup& group : groups) {
      if (contains(group, cast) && !reads(group, value)) {
        group.exprs.erase(std::find(group.exprs.begin(), group.exprs.end(), cast));
      }
    }
    recomputed.insert(cast);
  }
  groups.erase(std::remove_if(groups.begin(), groups.end(),
                   [](const MergedGroup& group) { return group.exprs.empty(); }),
      groups.end());
  return groups;
}

}  // namespace nvfuse
