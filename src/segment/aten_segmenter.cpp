#include "segment/aten_segmenter.h"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "ir/all_exprs.h"
#include "ir/sharding.h"
#include "schedule/coordinate_analysis.h"
#include "schedule/reduction_analysis.h"
#include "segment/host_views.h"
#include "segment/kernel_choice.h"
#include "segment/kernel_segments.h"
#include "segment/merge_groups.h"
#include "segment/recompute_input_work.h"
#include "segment/reductions_then_coordinates.h"
#include "segment/segment_builder.h"

namespace nvfuse {

namespace {

// Union-find over expr positions.
class Groups {
 public:
  explicit Groups(size_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), 0); }
  size_t find(size_t i) {
    while (parent_[i] != i) {
      parent_[i] = parent_[parent_[i]];
      i = parent_[i];
    }
    return i;
  }
  void join(size_t a, size_t b) { parent_[find(a)] = find(b); }

 private:
  std::vector<size_t> parent_;
};

bool is_tensor_expr(const Expr* expr) { return expr->output(0)->is<TensorView>(); }

}  // namespace

bool runs_through_aten(const Expr& expr) {
  return (kernels_of(expr.kind()) & (kElementwise | kDomain)) == 0;
}

FusionReductions reductions_of(const Fusion& fusion) {
  std::set<std::pair<int64_t, std::vector<int64_t>>> axis_sets;
  for (const Expr* expr : fusion.exprs()) {
    if (is_reduction(expr)) {
      axis_sets.emplace(expr->input(0)->as<TensorView>()->rank(), reduced_axes_of(*expr));
    }
  }
  FusionReductions reductions;
  reductions.axis_sets.assign(axis_sets.begin(), axis_sets.end());
  if (axis_sets.size() == 1) {
    reductions.sets = FusionReductions::kOneAxisSet;
  } else if (axis_sets.size() > 1) {
    reductions.sets = FusionReductions::kSeveralAxisSets;
  }
  return reductions;
}

bool is_cut_out(const Expr& expr, const FusionReductions& reductions) {
  if (!runs_through_aten(expr)) {
    return false;
  }
  if (reductions.sets == FusionReductions::kNone) {
    return !is_coordinate_expr(expr);
  }
  if (is_position_expr(expr)) {
    return reductions.sets == FusionReductions::kSeveralAxisSets && expr.is<RngOp>() &&
        !expr.as<RngOp>()->has_explicit_seed();
  }
  if (expr.is<SqueezeOp>()) {
    return false;
  }
  return std::none_of(reductions.axis_sets.begin(), reductions.axis_sets.end(),
      [&](const auto& set) { return is_row_gather(expr, set.first, set.second); });
}

namespace {

bool is_segment_set(const Expr& expr) {
  return expr.is<PointwiseOp>() && expr.as<PointwiseOp>()->op() == OpType::segment_set;
}

// Segments are ordered by depth; at one depth, host views of values from
// earlier depths first, then kernels, then ATen exprs and views of kernel
// results (they read values of depth <= d only).
enum Phase { kViewOfEarlier, kKernel, kAfterKernels, kDeferredKernel };
bool is_kernel(Phase phase) { return phase == kKernel || phase == kDeferredKernel; }
struct Planned {
  int depth;
  Phase phase;
  std::vector<const Expr*> members;
};

// Kernel groups that the schedulers do not take whole (a sum of a sum),
// each split into groups that one kernel takes (segment/merge_groups.h),
// elementwise work on inputs recomputed by its readers
// (segment/recompute_input_work.h, those go into `recomputed`); the
// pieces keep the group's place in the run order.
std::vector<Planned> split_unschedulable_kernels(const Fusion& fusion, std::vector<Planned> planned,
    std::unordered_set<const Expr*>& recomputed) {
  const GroupCheck one_kernel = [&](const std::vector<const Expr*>& exprs) {
    return is_one_kernel(*build_segment(fusion, exprs, false).fusion);
  };
  std::vector<Planned> result;
  for (Planned& group : planned) {
    if (!is_kernel(group.phase) ||
        runs_as_kernels(*build_segment(fusion, group.members, false).fusion)) {
      result.push_back(std::move(group));
      continue;
    }
    std::vector<MergedGroup> pieces = recompute_input_work(fusion, group.members,
        merge_into_kernel_groups(fusion, group.members, one_kernel), one_kernel, recomputed);
    for (MergedGroup& piece : pieces) {
      result.push_back({group.depth, group.phase, std::move(piece.exprs)});
    }
  }
  return result;
}

// Kernel groups of pointwise work on the fusion's inputs alone that have
// one depth and phase and compute results of the same extents become one
// group when one kernel takes them all: independent updates (a ResNet's
// batch counters, a 0-d add per batch norm) are otherwise a launch each.
// Reading nothing another group makes, no merged group waits on another.
std::vector<Planned> merge_alike_input_work(const Fusion& fusion, std::vector<Planned> ordered) {
  const auto on_inputs_alone = [](const Planned& group) {
    const std::unordered_set<const Expr*> members(group.members.begin(), group.members.end());
    return std::all_of(group.members.begin(), group.members.end(), [&](const Expr* expr) {
      return !is_reduction(expr) &&
          std::all_of(expr->inputs().begin(), expr->inputs().end(), [&](const Val* in) {
            return in->definition() == nullptr || members.count(in->definition()) > 0 ||
                !in->is<TensorView>();
          });
    });
  };
  std::map<std::tuple<int, Phase, std::vector<std::string>>, size_t> first_alike;
  std::vector<Planned> merged;
  for (Planned& group : ordered) {
    if (!is_kernel(group.phase) || !on_inputs_alone(group)) {
      merged.push_back(std::move(group));
      continue;
    }
    const TensorView* result = group.members.back()->output(0)->as<TensorView>();
    auto [first, inserted] =
        first_alike.emplace(std::make_tuple(group.depth, group.phase, extents_key(result)), 0);
    if (!inserted) {
      Planned& into = merged[first->second];
      std::vector<const Expr*> members = into.members;
      members.insert(members.end(), group.members.begin(), group.members.end());
      if (is_one_kernel(*build_segment(fusion, members, false).fusion)) {
        into.members = std::move(members);
        continue;
      }
    }
    first->second = merged.size();
    merged.push_back(std::move(group));
  }
  return merged;
}

// The segments `ordered` plans, producers first.
std::vector<FusionSegment> build_planned(const Fusion& fusion, std::vector<Planned> ordered,
    const std::unordered_set<const Expr*>& host_views,
    const std::unordered_set<const Expr*>& recomputed) {
  std::stable_sort(ordered.begin(), ordered.end(), [](const Planned& a, const Planned& b) {
    return std::make_pair(a.depth, a.phase) < std::make_pair(b.depth, b.phase);
  });
  std::vector<FusionSegment> segments;
  for (const Planned& planned : ordered) {
    segments.push_back(
        build_segment(fusion, planned.members, !is_kernel(planned.phase), recomputed));
    segments.back().is_host_view =
        !is_kernel(planned.phase) && host_views.count(planned.members[0]);
  }
  return segments;
}

// The segments of `fusion` cut at the exprs `is_cut` accepts (each its own
// segment), `host_views` among them. With `defer_independent`, kernel exprs
// that feed no cut of their depth run after those cuts (so that work a
// communication does not wait for overlaps it). A segment_set starts a
// new kernel: it runs as a copy at the head of its consumers' kernel, and
// what it reads is written by an earlier one. With `split_kernels`, kernel
// groups the schedulers do not take whole are split further; a fusion
// nothing cuts is left whole unless `split_uncut`.
std::vector<FusionSegment> segment_at_cuts(const Fusion& fusion,
    const std::function<bool(const Expr&)>& is_cut,
    const std::unordered_set<const Expr*>& host_views, bool split_kernels, bool split_uncut,
    bool defer_independent = false) {
  std::vector<const Expr*> exprs;
  for (const Expr* expr : fusion.exprs()) {
    if (is_tensor_expr(expr)) {
      exprs.push_back(expr);
    }
  }
  // A scatter that runs in a kernel writes into a copy of its input
  // (operand 0), so what computes the input ends in an earlier kernel, and
  // what reads its result waits for every write: a later one. The work
  // computing its index and src joins its kernel.
  const auto scatter_kernel = [&](const Expr& e) { return e.is<ScatterOp>() && !is_cut(e); };
  const bool any_cut = std::any_of(exprs.begin(), exprs.end(),
      [&](const Expr* e) { return is_cut(*e) || is_segment_set(*e) || scatter_kernel(*e); });
  if (!any_cut && !split_uncut) {
    return {};
  }
  // Depth of a tensor: ATen exprs on the longest path from the inputs.
  std::unordered_map<const Val*, int> depth_of;
  std::unordered_map<const Expr*, size_t> position;
  std::vector<int> expr_depth(exprs.size());
  for (size_t i = 0; i < exprs.size(); ++i) {
    const Expr* expr = exprs[i];
    position[expr] = i;
    int depth = 0;
    for (size_t operand = 0; operand < expr->inputs().size(); ++operand) {
      if (auto it = depth_of.find(expr->input(operand)); it != depth_of.end()) {
        const bool written_over = operand == 0 && scatter_kernel(*expr);
        depth = std::max(depth, it->second + (written_over ? 1 : 0));
      }
    }
    // A segment_set is one step deeper than what it reads.
    expr_depth[i] = is_segment_set(*expr) ? depth + 1 : depth;
    depth = expr_depth[i];
    for (const Val* out : expr->outputs()) {
      // A host view costs nothing: kernels reading it stay at its depth.
      depth_of[out] =
          (is_cut(*expr) && !host_views.count(expr)) || scatter_kernel(*expr) ? depth + 1 : depth;
    }
  }
  // A kernel expr runs as late as its consumers allow, so that work on
  // inputs alone (a bias broadcast) joins the kernel after the ATen op that
  // uses it rather than making a kernel of its own.
  for (size_t i = exprs.size(); i-- > 0;) {
    const Expr* expr = exprs[i];
    if (is_cut(*expr) || scatter_kernel(*expr) || fusion.is_output(expr->output(0))) {
      continue;
    }
    int latest = -1;
    for (const Val* out : expr->outputs()) {
      for (const Expr* use : out->uses()) {
        if (auto it = position.find(use); it != position.end()) {
          // A segment_set's input, and the input a scatter writes over,
          // stay on the near side of it.
          const bool near_side =
              is_segment_set(*use) || (scatter_kernel(*use) && use->input(0) == out);
          const int d = expr_depth[it->second] - (near_side ? 1 : 0);
          latest = latest < 0 ? d : std::min(latest, d);
        }
      }
    }
    expr_depth[i] = std::max(expr_depth[i], latest);
  }
  // Kernel exprs deferred past the cuts of their depth: those that reach
  // none of them through exprs of that depth. Deferred and feeding exprs
  // never share a group.
  std::vector<bool> deferred(exprs.size(), false);
  if (defer_independent) {
    std::vector<bool> feeds(exprs.size(), false);
    for (size_t i = exprs.size(); i-- > 0;) {
      if (is_cut(*exprs[i])) {
        continue;
      }
      for (const Val* out : exprs[i]->outputs()) {
        for (const Expr* use : out->uses()) {
          auto it = position.find(use);
          if (it != position.end() && expr_depth[it->second] == expr_depth[i] &&
              (is_cut(*use) || feeds[it->second])) {
            feeds[i] = true;
          }
        }
      }
      deferred[i] = !feeds[i];
    }
  }
  Groups groups(exprs.size());
  // The first kernel expr at each depth that reads a tensor: siblings that
  // read the same tensor share a kernel (it is loaded once).
  std::unordered_map<const Val*, std::unordered_map<int, size_t>> first_reader;
  // Deferred work of one depth is one segment: it has no cut to wait for.
  std::unordered_map<int, size_t> first_deferred;
  for (size_t i = 0; i < exprs.size(); ++i) {
    const Expr* expr = exprs[i];
    if (is_cut(*expr)) {
      continue;
    }
    if (deferred[i]) {
      auto [first, inserted] = first_deferred.emplace(expr_depth[i], i);
      if (!inserted) {
        groups.join(i, first->second);
      }
    }
    for (size_t operand = 0; operand < expr->inputs().size(); ++operand) {
      const Val* in = expr->input(operand);
      if (!in->is<TensorView>() || (operand == 0 && scatter_kernel(*expr))) {
        continue;  // a scatter's input is made by an earlier kernel
      }
      const Expr* def = in->definition();
      if (def != nullptr && position.count(def) && !is_cut(*def) &&
          expr_depth[position[def]] == expr_depth[i] && deferred[position[def]] == deferred[i]) {
        groups.join(i, position[def]);
      }
      // Keyed by depth and deferral (odd: deferred).
      auto [reader, inserted] =
          first_reader[in].emplace(2 * expr_depth[i] + (deferred[i] ? 1 : 0), i);
      if (!inserted) {
        groups.join(i, reader->second);
      }
    }
  }
  const auto phase_of_cut = [&](const Expr* expr) {
    if (!host_views.count(expr)) {
      return kAfterKernels;
    }
    const Expr* def = expr->input(0)->definition();
    const bool made_by_kernel = def != nullptr && position.count(def) && !is_cut(*def);
    return made_by_kernel ? kAfterKernels : kViewOfEarlier;
  };
  std::vector<Planned> ordered;
  std::unordered_map<size_t, size_t> slot_of_group;
  std::unordered_map<const Expr*, size_t> slot_of_view;
  for (size_t i = 0; i < exprs.size(); ++i) {
    if (host_views.count(exprs[i])) {
      // A chain of views (slice -> reshape -> permute) is one host segment.
      const Expr* def = exprs[i]->input(0)->definition();
      if (auto it = slot_of_view.find(def); it != slot_of_view.end()) {
        ordered[it->second].members.push_back(exprs[i]);
        slot_of_view[exprs[i]] = it->second;
        continue;
      }
      slot_of_view[exprs[i]] = ordered.size();
    }
    if (is_cut(*exprs[i])) {
      ordered.push_back({expr_depth[i], phase_of_cut(exprs[i]), {exprs[i]}});
      continue;
    }
    auto [it, inserted] = slot_of_group.emplace(groups.find(i), ordered.size());
    if (inserted) {
      ordered.push_back({expr_depth[i], deferred[i] ? kDeferredKernel : kKernel, {}});
    }
    ordered[it->second].members.push_back(exprs[i]);
  }
  std::unordered_set<const Expr*> recomputed;
  if (split_kernels) {
    ordered = split_unschedulable_kernels(
        fusion, merge_alike_input_work(fusion, std::move(ordered)), recomputed);
  }
  // One kernel needs no cutting; one ATen expr or host view still runs as
  // its own segment (a view must not become a copy kernel).
  if (ordered.size() < 2 && (ordered.empty() || is_kernel(ordered[0].phase))) {
    return {};
  }
  return build_planned(fusion, std::move(ordered), host_views, recomputed);
}

// Launches the segments make: a host view makes none.
size_t launches_of(const std::vector<FusionSegment>& segments) {
  return std::count_if(segments.begin(), segments.end(),
      [](const FusionSegment& segment) { return !segment.is_host_view; });
}

// segment/reductions_then_coordinates.h: the reductions with what they
// read, then the rest, each split into the fewest kernels that take it;
// empty unless generated kernels take every piece.
std::vector<FusionSegment> reductions_before_the_rest(const Fusion& fusion) {
  const std::optional<ReductionsThenRest> split = split_reductions_from_rest(fusion);
  if (!split.has_value()) {
    return {};
  }
  std::unordered_set<const Expr*> recomputed;
  std::vector<Planned> ordered = split_unschedulable_kernels(
      fusion, {{0, kKernel, split->reductions}, {1, kKernel, split->rest}}, recomputed);
  std::vector<FusionSegment> segments = build_planned(fusion, std::move(ordered), {}, recomputed);
  for (const FusionSegment& segment : segments) {
    if (!is_one_kernel(*segment.fusion)) {
      return {};
    }
  }
  return segments;
}

}  // namespace

std::vector<FusionSegment> segment_at_aten_ops(const Fusion& fusion, bool split_uncut) {
  // Without reductions, the coordinate kernel computes slices, gathers,
  // random values... with the pointwise work around them; with them, most
  // of those exprs are cut out (each then runs as its own coordinate kernel).
  const FusionReductions reductions = reductions_of(fusion);
  const std::unordered_set<const Expr*> host_views = find_host_views(fusion, reductions);
  std::vector<FusionSegment> segments = segment_at_cuts(
      fusion, [&](const Expr& e) { return host_views.count(&e) || is_cut_out(e, reductions); },
      host_views, /*split_kernels=*/true, split_uncut);
  if (launches_of(segments) > 2 && reductions.sets != FusionReductions::kNone) {
    std::vector<FusionSegment> fewer = reductions_before_the_rest(fusion);
    if (!fewer.empty() && launches_of(fewer) < launches_of(segments)) {
      return fewer;
    }
  }
  return segments;
}

std::vector<FusionSegment> segment_at_host_steps(
    const Fusion& fusion, const std::unordered_set<const Expr*>& steps) {
  return segment_at_cuts(
      fusion, [&](const Expr& e) { return steps.count(&e) > 0; }, {},
      /*split_kernels=*/false, /*split_uncut=*/false, /*defer_independent=*/true);
}

const char* kind_name(const FusionSegment& segment) {
  return segment.is_host_view ? "view" : segment.is_aten ? "aten" : "fused";
}

}  // namespace nvfuse
