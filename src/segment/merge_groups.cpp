#include "segment/merge_groups.h"

#include <algorithm>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "ir/all_exprs.h"
#include "ir/errors.h"

namespace nvfuse {

namespace {

// Relabelings of their input's elements: free inside a kernel, a copy on
// their own.
bool is_relabeling(const Expr& expr) {
  return expr.is<BroadcastOp>() || expr.is<ExpandOp>() || expr.is<SqueezeOp>();
}

// A tensor's axes that hold data: the proxy for its size when choosing the
// producer group to join (joining saves writing and re-reading the tensor).
int64_t data_axes(const Val* v) {
  int64_t count = 0;
  for (const IterDomain* id : v->as<TensorView>()->logical()) {
    count += id->is_broadcast() ? 0 : 1;
  }
  return count;
}

class Merger {
 public:
  Merger(const Fusion& fusion, const std::vector<const Expr*>& exprs, const GroupCheck& accepts)
      : fusion_(fusion), exprs_(exprs), accepts_(accepts), group_of_(exprs.size()) {
    for (size_t i = 0; i < exprs.size(); ++i) {
      index_[exprs[i]] = i;
    }
  }

  std::vector<MergedGroup> run() {
    form_units();
    merge_units();
    merge_adjacent_groups();
    merge_alike_groups();
    merge_rejected_groups();
    return in_run_order();
  }

 private:
  struct Group {
    std::vector<size_t> members;  // expr indices, ascending
    bool accepted = false;
    bool alive = true;
  };

  // One group per unit: an expr with the relabelings that only it reads
  // (walking backwards, a relabeling joins its consumers' unit when they
  // share one). Groups are numbered in run order of their last expr.
  void form_units() {
    const size_t n = exprs_.size();
    std::vector<size_t> unit_of(n);
    std::vector<std::vector<size_t>> units;
    for (size_t i = n; i-- > 0;) {
      const Expr* expr = exprs_[i];
      std::optional<size_t> consumer_unit;
      bool joins = is_relabeling(*expr) && !fusion_.is_output(expr->output(0));
      for (const Expr* use : expr->output(0)->uses()) {
        if (!joins) {
          break;
        }
        auto it = index_.find(use);
        joins = it != index_.end() && (!consumer_unit || *consumer_unit == unit_of[it->second]);
        if (joins) {
          consumer_unit = unit_of[it->second];
        }
      }
      if (joins && consumer_unit) {
        unit_of[i] = *consumer_unit;
        units[*consumer_unit].push_back(i);
      } else {
        unit_of[i] = units.size();
        units.push_back({i});
      }
    }
    // units[k][0] is the unit's last expr; producers' units end earlier.
    std::sort(units.begin(), units.end(), [](const auto& a, const auto& b) { return a[0] < b[0]; });
    for (std::vector<size_t>& members : units) {
      std::sort(members.begin(), members.end());
      for (size_t i : members) {
        group_of_[i] = groups_.size();
      }
      groups_.push_back({std::move(members), false, true});
    }
  }

  // The first pass: each unit, in run order, joins the group of a producer
  // (the one whose tensor it reads has the most data axes first) or of an
  // earlier reader of a tensor it reads; else it starts a group. A group no
  // kernel takes may still join one: an expand feeding a sub is no kernel
  // (its output is stride 0) until the sub's consumer joins it.
  void merge_units() {
    std::unordered_map<const Val*, std::vector<size_t>> readers;  // expr indices
    for (size_t u = 0; u < groups_.size(); ++u) {
      std::vector<std::pair<int64_t, size_t>> weighted;  // (-axes, producer)
      for (size_t i : groups_[u].members) {
        for (const Val* in : exprs_[i]->inputs()) {
          auto it = index_.find(in->definition());
          if (it != index_.end() && group_of_[it->second] != u) {
            weighted.emplace_back(-data_axes(in), group_of_[it->second]);
          }
        }
      }
      std::sort(weighted.begin(), weighted.end());
      std::vector<size_t> candidates;
      for (const auto& [axes, g] : weighted) {
        candidates.push_back(g);
      }
      const std::vector<size_t> members = groups_[u].members;
      for (size_t i : members) {
        for (const Val* in : exprs_[i]->inputs()) {
          if (!in->is<TensorView>()) {
            continue;
          }
          for (size_t reader : readers[in]) {
            candidates.push_back(group_of_[reader]);
          }
          readers[in].push_back(i);
        }
      }
      std::unordered_set<size_t> tried;
      bool joined = false;
      for (size_t g : candidates) {
        if (g != u && tried.insert(g).second && groups_[g].alive && try_join(g, u)) {
          joined = true;
          break;
        }
      }
      if (!joined) {
        groups_[u].accepted = accepts_(exprs_of(members));
      }
    }
  }

  // The second pass: an accepted group joins a producer's group when the
  // union is one kernel (the consumer chose another producer's group in the
  // first pass, or the producer was rejected alone), else a sibling's (an
  // accepted group reading what one of its producers makes: the two
  // second stages of batch norm's backward sums, one launch instead of
  // two), until nothing changes.
  void merge_adjacent_groups() {
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t b = 0; b < groups_.size(); ++b) {
        if (!groups_[b].alive || !groups_[b].accepted) {
          continue;
        }
        if (join_any(producers(b), b) || join_any(siblings(b), b)) {
          changed = true;
        }
      }
    }
  }

  // The third pass: accepted groups of pointwise work whose results have
  // the same extents join the first such group when the union is one
  // kernel, though neither reads the other (a ResNet's batch counters, a
  // 0-d add per batch norm, each a launch of its own, become one kernel).
  // One check per group.
  void merge_alike_groups() {
    std::map<std::vector<std::string>, size_t> first_of_extents;
    for (size_t g = 0; g < groups_.size(); ++g) {
      if (!groups_[g].alive || !groups_[g].accepted || !is_pointwise(g)) {
        continue;
      }
      auto [first, inserted] = first_of_extents.emplace(
          extents_key(exprs_[groups_[g].members.back()]->output(0)->as<TensorView>()), g);
      if (!inserted) {
        try_join(first->second, g);
      }
    }
  }

  bool is_pointwise(size_t g) const {
    return std::none_of(groups_[g].members.begin(), groups_[g].members.end(),
        [&](size_t i) { return is_reduction(exprs_[i]); });
  }

  // Joins `g` into the first of `groups` that takes it.
  bool join_any(const std::set<size_t>& groups, size_t g) {
    for (size_t a : groups) {
      if (try_join(a, g)) {
        return true;
      }
    }
    return false;
  }

  // The accepted groups other than `g` that read what a producer of `g`
  // makes.
  std::set<size_t> siblings(size_t g) const {
    const std::set<size_t> made_for_g = producers(g);
    std::set<size_t> result;
    for (size_t other = 0; other < groups_.size(); ++other) {
      if (other == g || !groups_[other].alive || !groups_[other].accepted) {
        continue;
      }
      for (size_t p : producers(other)) {
        if (made_for_g.count(p)) {
          result.insert(other);
          break;
        }
      }
    }
    return result;
  }

  // Rejected groups that touch become one: the reference evaluator runs
  // any exprs, and fewer segments pass fewer tensors between them.
  void merge_rejected_groups() {
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t b = 0; b < groups_.size(); ++b) {
        if (!groups_[b].alive || groups_[b].accepted) {
          continue;
        }
        for (size_t a : producers(b)) {
          if (!groups_[a].accepted && !creates_cycle(a, b)) {
            absorb(a, b);
            changed = true;
            break;
          }
        }
      }
    }
  }

  // Merges group `from` into group `into` when that keeps the groups a DAG
  // and one kernel computes the union.
  bool try_join(size_t into, size_t from) {
    if (creates_cycle(into, from)) {
      return false;
    }
    std::vector<size_t> members = groups_[into].members;
    members.insert(members.end(), groups_[from].members.begin(), groups_[from].members.end());
    std::sort(members.begin(), members.end());
    if (!accepts_(exprs_of(members))) {
      return false;
    }
    absorb(into, from);
    groups_[into].accepted = true;
    return true;
  }

  void absorb(size_t into, size_t from) {
    for (size_t i : groups_[from].members) {
      group_of_[i] = into;
      groups_[into].members.push_back(i);
    }
    std::sort(groups_[into].members.begin(), groups_[into].members.end());
    groups_[from].members.clear();
    groups_[from].alive = false;
  }

  // Merging a and b makes a cycle when a path leaves one and reaches the
  // other through a third group.
  bool creates_cycle(size_t a, size_t b) const {
    for (auto [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
      for (size_t h : producers(to)) {
        if (h != from && depends_on(h, from)) {
          return true;
        }
      }
    }
    return false;
  }

  // True when group `g` reads, directly or not, what `target` makes.
  bool depends_on(size_t g, size_t target) const {
    std::vector<size_t> stack{g};
    std::unordered_set<size_t> seen{g};
    while (!stack.empty()) {
      const size_t current = stack.back();
      stack.pop_back();
      if (current == target) {
        return true;
      }
      for (size_t h : producers(current)) {
        if (seen.insert(h).second) {
          stack.push_back(h);
        }
      }
    }
    return false;
  }

  // The groups that make a value `g` reads.
  std::set<size_t> producers(size_t g) const {
    std::set<size_t> result;
    for (size_t i : groups_[g].members) {
      for (const Val* in : exprs_[i]->inputs()) {
        auto it = index_.find(in->definition());
        if (it != index_.end() && group_of_[it->second] != g) {
          result.insert(group_of_[it->second]);
        }
      }
    }
    return result;
  }

  std::vector<const Expr*> exprs_of(const std::vector<size_t>& members) const {
    std::vector<const Expr*> result;
    for (size_t i : members) {
      result.push_back(exprs_[i]);
    }
    return result;
  }

  // Producers first; among ready groups, the one whose first expr is earliest.
  std::vector<MergedGroup> in_run_order() const {
    std::vector<size_t> waiting(groups_.size(), 0);
    std::vector<std::vector<size_t>> consumers(groups_.size());
    using Ready = std::pair<size_t, size_t>;  // (first expr, group)
    std::priority_queue<Ready, std::vector<Ready>, std::greater<>> ready;
    for (size_t g = 0; g < groups_.size(); ++g) {
      if (!groups_[g].alive) {
        continue;
      }
      for (size_t h : producers(g)) {
        consumers[h].push_back(g);
        ++waiting[g];
      }
      if (waiting[g] == 0) {
        ready.emplace(groups_[g].members.front(), g);
      }
    }
    std::vector<MergedGroup> ordered;
    size_t alive = 0;
    for (const Group& group : groups_) {
      alive += group.alive ? 1 : 0;
    }
    while (!ready.empty()) {
      const size_t g = ready.top().second;
      ready.pop();
      ordered.push_back({exprs_of(groups_[g].members), groups_[g].accepted});
      for (size_t c : consumers[g]) {
        if (--waiting[c] == 0) {
          ready.emplace(groups_[c].members.front(), c);
        }
      }
    }
    NVFUSE_ASSERT(ordered.size() == alive, "the merged groups depend on each other in a cycle");
    return ordered;
  }

  const Fusion& fusion_;
  const std::vector<const Expr*>& exprs_;
  const GroupCheck& accepts_;
  std::unordered_map<const Expr*, size_t> index_;
  std::vector<size_t> group_of_;  // per expr index
  std::vector<Group> groups_;
};

}  // namespace

std::vector<std::string> extents_key(const TensorView* tv) {
  std::vector<std::string> key;
  for (const IterDomain* id : tv->logical()) {
    const std::optional<int64_t> constant = id->extent()->constant_int();
    key.push_back(constant.has_value()
            ? std::to_string(*constant)
            : "s" + std::to_string(reinterpret_cast<uintptr_t>(id->extent())));
  }
  return key;
}

std::vector<MergedGroup> merge_into_kernel_groups(
    const Fusion& fusion, const std::vector<const Expr*>& exprs, const GroupCheck& accepts) {
  return Merger(fusion, exprs, accepts).run();
}

}  // namespace nvfuse
