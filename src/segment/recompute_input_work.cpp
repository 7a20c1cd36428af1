#include "segment/recompute_input_work.h"

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "ir/all_exprs.h"

namespace nvfuse {

namespace {

bool reads(const MergedGroup& group, const Val* v) {
  return std::any_of(
      group.exprs.begin(), group.exprs.end(), [&](const Expr* e) { return e->reads(v); });
}

bool contains(const std::vector<const Expr*>& exprs, const Expr* expr) {
  return std::find(exprs.begin(), exprs.end(), expr) != exprs.end();
}

bool contains(const MergedGroup& group, const Expr* expr) { return contains(group.exprs, expr); }

// Element i of the result depends on element i of the (broadcast) operands
// alone, and on nothing random (random values come from RngOp): a kernel
// that computes it again gets the same values.
bool is_elementwise(const Expr& expr) {
  return expr.is<PointwiseOp>() || expr.is<CastOp>() || expr.is<BroadcastOp>() ||
      expr.is<ExpandOp>();
}

int64_t iterated_axes(const TensorView* tv) {
  const auto& axes = tv->logical();
  return std::count_if(
      axes.begin(), axes.end(), [](const IterDomain* id) { return !id->is_broadcast(); });
}

// Bytes an element of `tv` adds to a pass over the elements of `value`:
// none for a tensor with fewer iterated axes (a per-channel statistic
// broadcast over the activation is read once and cached).
int64_t bytes_per_element(const TensorView* tv, const TensorView* value) {
  return iterated_axes(tv) < iterated_axes(value) ? 0 : size_in_bytes(tv->dtype());
}

// The groups' exprs as the recomputation changes them.
class InputWork {
 public:
  InputWork(const Fusion& fusion, const std::vector<const Expr*>& exprs,
      const std::vector<MergedGroup>& groups)
      : fusion_(fusion), groups_(groups) {
    for (size_t i = 0; i < exprs.size(); ++i) {
      index_[exprs[i]] = i;
    }
  }

  // Elementwise work among the exprs whose result no fusion output is and
  // only the exprs read.
  bool is_candidate(const Expr* expr) const {
    if (!index_.count(expr) || !is_elementwise(*expr) || expr->outputs().size() != 1 ||
        !expr->output(0)->is<TensorView>() || fusion_.is_output(expr->output(0))) {
      return false;
    }
    const auto& uses = expr->output(0)->uses();
    return std::all_of(
        uses.begin(), uses.end(), [&](const Expr* use) { return index_.count(use) > 0; });
  }

  // Whether every group that reads `expr`'s result computes it itself.
  bool every_reader_computes(const Expr* expr) const {
    return std::none_of(groups_.begin(), groups_.end(), [&](const MergedGroup& group) {
      return reads(group, expr->output(0)) && !contains(group, expr);
    });
  }

  // The exprs `group` lacks to compute `expr`'s result from what the exprs
  // do not make (fusion inputs, earlier parts' results): `expr` and the
  // producers of what it reads. nullopt when a producer is no candidate or
  // some group reads its result from memory: the group would then wait on
  // the group that writes it, which may wait on this one.
  std::optional<std::vector<const Expr*>> missing_work(
      const MergedGroup& group, const Expr* expr) const {
    std::vector<const Expr*> missing;
    std::vector<const Expr*> pending{expr};
    while (!pending.empty()) {
      const Expr* e = pending.back();
      pending.pop_back();
      if (contains(group, e) || contains(missing, e)) {
        continue;
      }
      if (e != expr && !(is_candidate(e) && every_reader_computes(e))) {
        return std::nullopt;
      }
      missing.push_back(e);
      for (const Val* in : e->inputs()) {
        if (in->is<TensorView>() && in->definition() != nullptr && index_.count(in->definition())) {
          pending.push_back(in->definition());
        }
      }
    }
    return missing;
  }

  // Whether `group` computing `missing` moves no more bytes an element than
  // reading `expr`'s result: the tensors it would read anew against the
  // result's read and its share (of `readers`) of the result's write.
  bool pays(const MergedGroup& group, const Expr* expr, const std::vector<const Expr*>& missing,
      size_t readers) const {
    const auto* value = expr->output(0)->as<TensorView>();
    std::vector<const Val*> counted;
    int64_t anew = 0;
    for (const Expr* e : missing) {
      for (const Val* in : e->inputs()) {
        const Expr* def = in->definition();
        const bool computed =
            def != nullptr && index_.count(def) && (contains(group, def) || contains(missing, def));
        if (!in->is<TensorView>() || computed || reads(group, in) ||
            std::find(counted.begin(), counted.end(), in) != counted.end()) {
          continue;
        }
        counted.push_back(in);
        anew += bytes_per_element(in->as<TensorView>(), value);
      }
    }
    const int64_t saved = size_in_bytes(value->dtype());
    return anew * static_cast<int64_t>(readers) <= saved * static_cast<int64_t>(readers + 1);
  }

  // `group`'s exprs with `more`, in the exprs' order.
  std::vector<const Expr*> with(
      const MergedGroup& group, const std::vector<const Expr*>& more) const {
    std::vector<const Expr*> result = group.exprs;
    result.insert(result.end(), more.begin(), more.end());
    std::sort(result.begin(), result.end(),
        [&](const Expr* a, const Expr* b) { return index_.at(a) < index_.at(b); });
    return result;
  }

 private:
  const Fusion& fusion_;
  const std::vector<MergedGroup>& groups_;
  std::unordered_map<const Expr*, size_t> index_;
};

// The groups that read `expr`'s result without computing it, each extended
// by the work it lacks; nullopt unless every one of them takes it.
std::optional<std::vector<std::pair<size_t, std::vector<const Expr*>>>> readers_extended(
    const InputWork& work, const std::vector<MergedGroup>& groups, const Expr* expr,
    const GroupCheck& accepts) {
  std::vector<size_t> readers;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (!contains(groups[g], expr) && reads(groups[g], expr->output(0))) {
      readers.push_back(g);
    }
  }
  std::vector<std::pair<size_t, std::vector<const Expr*>>> extended;
  for (size_t g : readers) {
    const std::optional<std::vector<const Expr*>> missing = work.missing_work(groups[g], expr);
    if (!groups[g].accepted || !missing.has_value() ||
        !work.pays(groups[g], expr, *missing, readers.size())) {
      return std::nullopt;
    }
    std::vector<const Expr*> members = work.with(groups[g], *missing);
    if (!accepts(members)) {
      return std::nullopt;
    }
    extended.emplace_back(g, std::move(members));
  }
  return extended;
}

}  // namespace

std::vector<MergedGroup> recompute_input_work(const Fusion& fusion,
    const std::vector<const Expr*>& exprs, std::vector<MergedGroup> groups,
    const GroupCheck& accepts, std::unordered_set<const Expr*>& recomputed) {
  const InputWork work(fusion, exprs, groups);
  // Producers first: a reader's work reaches back through the producers'
  // results that every reader already computes.
  for (const Expr* expr : exprs) {
    if (!work.is_candidate(expr)) {
      continue;
    }
    auto extended = readers_extended(work, groups, expr, accepts);
    if (!extended.has_value()) {
      continue;
    }
    for (auto& [g, members] : *extended) {
      groups[g].exprs = std::move(members);
    }
  }
  // Work every reader computes is written by none; a group keeps its copy
  // only if it reads the result. Latest first: a copy dropped may leave
  // its producers' results unread there.
  for (auto it = exprs.rbegin(); it != exprs.rend(); ++it) {
    const Expr* expr = *it;
    if (!work.is_candidate(expr) || !work.every_reader_computes(expr)) {
      continue;
    }
    recomputed.insert(expr);
    for (MergedGroup& group : groups) {
      auto at = std::find(group.exprs.begin(), group.exprs.end(), expr);
      if (at != group.exprs.end() && !reads(group, expr->output(0))) {
        group.exprs.erase(at);
      }
    }
  }
  groups.erase(std::remove_if(groups.begin(), groups.end(),
                   [](const MergedGroup& group) { return group.exprs.empty(); }),
      groups.end());
  return groups;
}

}  // namespace nvfuse
