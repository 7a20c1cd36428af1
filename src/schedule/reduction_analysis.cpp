#include "schedule/reduction_analysis.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_set>

#include "schedule/coordinate_analysis.h"
#include "schedule/pointwise_analysis.h"
#include "schedule/reduction_memory_walks.h"

namespace nvfuse {

namespace {

class Analyzer {
 public:
  Analyzer(const Fusion& fusion, std::string* why_not) : fusion_(fusion), why_not_(why_not) {}

  std::optional<ReductionAnalysis> run() {
    if (!check_exprs() || !split_outer_reductions() || !find_reference() || !anchor() ||
        !propagate() || !check_reference_spans_all()) {
      return std::nullopt;
    }
    classify();
    if (!check_reduction_inputs() || !collect_inputs() ||
        !accept(why_reduced_axes_are_no_one_walk(a_))) {
      return std::nullopt;
    }
    assign_phases();
    if (!accept(why_later_phases_walk_across_memory(a_))) {
      return std::nullopt;
    }
    collect_positions();
    return std::move(a_);
  }

 private:
  // False (and the reason kept) when there is one.
  bool accept(const std::optional<std::string>& why_not) {
    return !why_not.has_value() || reject(*why_not);
  }

  bool reject(const std::string& reason) {
    if (why_not_ != nullptr) {
      *why_not_ = reason;
    }
    return false;
  }

  bool check_exprs() {
    for (const Expr* expr : fusion_.exprs()) {
      if (!expr->output(0)->is<TensorView>()) {
        continue;  // scalar arithmetic runs on the host
      }
      if (expr->is<GatherOp>()) {
        gathers_.push_back(expr);  // checked once the reduced axes are known
      } else if (!is_elementwise_expr(*expr) && !is_reduction(expr) && !is_position_expr(*expr) &&
          !expr->is<SqueezeOp>()) {
        return reject(std::string("it has a ") + name_of(expr->kind()));
      }
      std::string why_not;
      if (!makes_codegen_values(*expr, &why_not)) {
        return reject(why_not);
      }
      if (expr->is<ReductionOp>()) {
        const OpType op = expr->as<ReductionOp>()->op();
        if (is_boolean(expr->input(0)->dtype()) &&
            (op == OpType::maximum || op == OpType::minimum)) {
          return reject("it takes the max or min of a boolean tensor");
        }
      }
      if (is_reduction(expr)) {
        reductions_.push_back(expr);
      }
    }
    if (reductions_.empty()) {
      return reject("it has no reduction");
    }
    return true;
  }

  // Reductions over two complementary axis sets: the class whose results
  // feed only per-column math and outputs is the outer one (when both could
  // be, the one that keeps the last axis). One class: nothing to do.
  bool split_outer_reductions() {
    std::vector<std::vector<const Expr*>> classes;
    for (const Expr* expr : reductions_) {
      const auto same_class = [&](const std::vector<const Expr*>& c) {
        return reduced_axes_of(*c.front()) == reduced_axes_of(*expr) &&
            c.front()->input(0)->as<TensorView>()->rank() ==
            expr->input(0)->as<TensorView>()->rank();
      };
      auto same = std::find_if(classes.begin(), classes.end(), same_class);
      if (same == classes.end()) {
        classes.push_back({expr});
      } else {
        same->push_back(expr);
      }
    }
    if (classes.size() == 1) {
      return true;
    }
    if (classes.size() != 2 || !complementary(classes[0].front(), classes[1].front())) {
      return reject("its reductions reduce different axes");
    }
    const int rank = static_cast<int>(classes[0].front()->input(0)->as<TensorView>()->rank());
    std::vector<int> candidates;
    for (int c = 0; c < 2; ++c) {
      if (feeds_only_columns(classes[c], nullptr, nullptr)) {
        candidates.push_back(c);
      }
    }
    if (candidates.empty()) {
      return reject(
          "its reductions reduce different axes, and neither set's results feed "
          "only outputs");
    }
    // The per-row (inner) class must reduce the axis innermost in memory:
    // the kernel's schedule declines every input where it does not.
    const int64_t innermost = innermost_axis(rank);
    const auto reduces_innermost = [&](int c) {
      const auto& axes = reduced_axes_of(*classes[c].front());
      return std::find(axes.begin(), axes.end(), innermost) != axes.end();
    };
    int outer = candidates.front();
    if (candidates.size() == 2) {
      outer = reduces_innermost(0) ? 1 : 0;
    }
    if (!reduces_innermost(1 - outer)) {
      return reject(
          "its reductions reduce different axes, and the set whose results "
          "feed only outputs reduces the innermost axis");
    }
    feeds_only_columns(classes[outer], &a_.column_exprs, &a_.column_outputs);
    a_.outer_reductions = classes[outer];
    reductions_ = classes[1 - outer];
    return true;
  }

  // The logical axis that is innermost in memory in tensors of `rank`
  // axes: as the first fusion input of that rank is laid out (its stride
  // order), else the last axis.
  int64_t innermost_axis(int64_t rank) const {
    for (const Val* in : fusion_.inputs()) {
      if (in->is<TensorView>() && in->as<TensorView>()->rank() == rank) {
        auto order = in->as<TensorView>()->domain().allocation_permutation();
        return order.has_value() && !order->empty() ? order->back() : rank - 1;
      }
    }
    return rank - 1;
  }

  // Between them a and b reduce every axis of one shape exactly once.
  static bool complementary(const Expr* a, const Expr* b) {
    const int64_t rank = a->input(0)->as<TensorView>()->rank();
    if (b->input(0)->as<TensorView>()->rank() != rank) {
      return false;
    }
    std::vector<int> count(rank, 0);
    for (const Expr* e : {a, b}) {
      for (int64_t axis : reduced_axes_of(*e)) {
        ++count[axis];
      }
    }
    return std::all_of(count.begin(), count.end(), [](int c) { return c == 1; });
  }

  // True when the results of `reductions` (ReductionOps) reach only casts
  // and single-tensor pointwise math with constant operands, and from them
  // fusion outputs. Collects those exprs and outputs when asked.
  bool feeds_only_columns(const std::vector<const Expr*>& reductions,
      std::vector<const Expr*>* exprs, std::vector<const TensorView*>* outputs) const {
    std::unordered_set<const Val*> column;
    for (const Expr* r : reductions) {
      if (!r->is<ReductionOp>()) {
        return false;
      }
      column.insert(r->output(0));
    }
    for (const Expr* expr : fusion_.exprs()) {
      if (is_reduction(expr) &&
          std::find(reductions.begin(), reductions.end(), expr) != reductions.end()) {
        continue;
      }
      bool reads_column = false;
      bool other_tensor = false;
      bool non_constant = false;
      for (const Val* in : expr->inputs()) {
        if (column.count(in)) {
          reads_column = true;
        } else if (in->is<TensorView>()) {
          other_tensor = true;
        } else if (!in->as<Scalar>()->is_constant()) {
          non_constant = true;
        }
      }
      if (!reads_column) {
        continue;
      }
      if (other_tensor || non_constant || !(expr->is<CastOp>() || expr->is<PointwiseOp>())) {
        return false;
      }
      column.insert(expr->output(0));
      if (exprs != nullptr) {
        exprs->push_back(expr);
      }
    }
    if (outputs != nullptr) {
      std::unordered_set<const Val*> seen;
      for (const Val* out : fusion_.outputs()) {
        if (column.count(out) && seen.insert(out).second) {
          outputs->push_back(out->as<TensorView>());
        }
      }
    }
    return true;
  }

  // False when some axis has constant sizes in both that differ. Symbolic
  // sizes are compared at run time (ReductionExecutor declines a mismatch).
  static bool same_constant_sizes(const TensorView* a, const TensorView* b) {
    for (int64_t axis = 0; axis < a->rank(); ++axis) {
      const auto x = a->logical()[axis]->logical_extent()->constant_int();
      const auto y = b->logical()[axis]->logical_extent()->constant_int();
      if (x.has_value() && y.has_value() && *x != *y) {
        return false;
      }
    }
    return true;
  }

  bool find_reference() {
    const Expr* first = reductions_.front();
    a_.reference = first->input(0)->as<TensorView>();
    a_.rank = static_cast<int>(a_.reference->rank());
    a_.reduced.assign(a_.rank, false);
    for (int64_t axis : reduced_axes_of(*first)) {
      a_.reduced[axis] = true;
    }
    for (const Expr* expr : reductions_) {
      NVFUSE_ASSERT(expr->input(0)->as<TensorView>()->rank() == a_.rank &&
              reduced_axes_of(*expr) == reduced_axes_of(*first),
          "split_outer_reductions left reductions of different classes");
      if (!same_constant_sizes(expr->input(0)->as<TensorView>(), a_.reference)) {
        return reject("it reduces tensors of different sizes (one kernel walks one shape)");
      }
    }
    for (int axis = 0; axis < a_.rank; ++axis) {
      if (!a_.reduced[axis]) {
        kept_axes_.push_back(axis);
      }
    }
    for (const Expr* gather : gathers_) {
      if (!is_row_gather(*gather, a_.rank, reduced_axes_of(*first))) {
        return reject("it has a gather that is not one index per row along the reduced axis");
      }
      // The source spans the reference (is_row_gather checked its rank).
      if (!assign(gather->input(0)->as<TensorView>(), identity())) {
        return false;
      }
    }
    return true;
  }

  std::vector<int> identity() const {
    std::vector<int> map(a_.rank);
    std::iota(map.begin(), map.end(), 0);
    return map;
  }

  bool assign(const TensorView* tv, const std::vector<int>& map) {
    if (!assign_axis_map(a_.axis_map, tv, map)) {
      return reject(tv->name() + " is reached with two different axis maps");
    }
    return true;
  }

  // Reduction inputs span the reference; their results keep the kept axes.
  // Outputs of full rank span it too, outputs of reduced rank are per row.
  bool anchor() {
    for (const Expr* expr : reductions_) {
      if (!assign(expr->input(0)->as<TensorView>(), identity())) {
        return false;
      }
      for (const Val* out : expr->outputs()) {
        if (!assign(out->as<TensorView>(), kept_axes_)) {
          return false;
        }
      }
    }
    std::vector<int> reduced_axes;
    for (int axis = 0; axis < a_.rank; ++axis) {
      if (a_.reduced[axis]) {
        reduced_axes.push_back(axis);
      }
    }
    for (const Expr* expr : a_.outer_reductions) {
      if (!assign(expr->input(0)->as<TensorView>(), identity())) {
        return false;
      }
    }
    std::unordered_set<const TensorView*> seen;
    for (const TensorView* tv : a_.column_outputs) {
      seen.insert(tv);
      if (tv->rank() != static_cast<int64_t>(reduced_axes.size())) {
        return reject(tv->name() + " has a rank the outer reduction does not explain");
      }
      for (const IterDomain* id : tv->logical()) {
        if (id->is_expanded()) {
          return reject(tv->name() + " is an expanded (stride-0) output");
        }
      }
      if (!assign(tv, reduced_axes)) {
        return false;
      }
    }
    for (const Val* out : fusion_.outputs()) {
      const auto* tv = out->as<TensorView>();
      if (fusion_.is_input(tv) || !seen.insert(tv).second) {
        continue;
      }
      for (const IterDomain* id : tv->logical()) {
        if (id->is_expanded()) {
          return reject(tv->name() + " is an expanded (stride-0) output");
        }
      }
      const std::optional<std::vector<int>> map = output_axis_map(*tv);
      if (!map.has_value()) {
        return reject(tv->name() + " has a rank the reduction does not explain");
      }
      if (!assign(tv, *map)) {
        return false;
      }
      a_.outputs.push_back(tv);
    }
    return true;
  }

  // The reference axes an output's axes stand for, told by its rank: all
  // of them, or the kept ones (a per-row value); else either without the
  // reference's broadcast axes, which a squeeze drops (batch norm's
  // statistics, [1, C, 1, 1] in the kernel, are written as [C]), when
  // only one of those has the output's rank.
  std::optional<std::vector<int>> output_axis_map(const TensorView& tv) const {
    const auto has_rank = [&](const std::vector<int>& map) {
      return static_cast<int64_t>(map.size()) == tv.rank();
    };
    if (has_rank(identity())) {
      return identity();
    }
    if (has_rank(kept_axes_)) {
      return kept_axes_;
    }
    const auto without_broadcasts = [&](std::vector<int> axes) {
      axes.erase(std::remove_if(axes.begin(), axes.end(),
                     [&](int axis) { return a_.reference->logical()[axis]->is_broadcast(); }),
          axes.end());
      return axes;
    };
    const std::vector<int> all_dense = without_broadcasts(identity());
    const std::vector<int> kept_dense = without_broadcasts(kept_axes_);
    if (has_rank(all_dense) == has_rank(kept_dense)) {
      return std::nullopt;  // neither, or both (which one is not known)
    }
    return has_rank(all_dense) ? all_dense : kept_dense;
  }

  // Consumers to producers, as the pointwise analysis.
  bool propagate() {
    const std::vector<Expr*> exprs = fusion_.exprs();
    if (!propagate_axis_maps(exprs, a_.axis_map, why_not_)) {
      return false;
    }
    std::unordered_set<const Expr*> columns(a_.column_exprs.begin(), a_.column_exprs.end());
    columns.insert(a_.outer_reductions.begin(), a_.outer_reductions.end());
    for (const Expr* expr : exprs) {
      const Val* out = expr->output(0);
      if (out->is<TensorView>() && a_.axis_map.count(out->as<TensorView>()) &&
          !columns.count(expr)) {
        a_.exprs.push_back(expr);
      }
    }
    a_.reductions = reductions_;
    return true;
  }

  // The kernel walks the reference's shape, so a tensor that is wider than
  // the reference on one of its broadcast axes (a normalization applying
  // statistics reduced from [N, C, 1, 1] partials to the [N, C, H, W]
  // activation) makes every call decline at run time
  // (matches_reference_shape) unless that axis has size 1 then. Rejected
  // here (unless the size is 1 by definition), so that the segmenter gives
  // that epilogue its own kernel instead of the reference evaluator.
  bool check_reference_spans_all() {
    for (const auto& [tv, map] : a_.axis_map) {
      for (size_t axis = 0; axis < map.size(); ++axis) {
        if (map[axis] < 0 || !a_.reference->logical()[map[axis]]->is_broadcast()) {
          continue;
        }
        const IterDomain* id = tv->logical()[axis];
        if (!id->is_broadcast() && !id->logical_extent()->is_constant_int(1)) {
          return reject(tv->name() + " is wider than the reduced tensor on its broadcast axis " +
              std::to_string(map[axis]) + " (one kernel walks the reduced tensor's shape)");
        }
      }
    }
    return true;
  }

  // Per element when some logical axis maps to a reduced axis and is not a
  // broadcast there.
  void classify() {
    for (const auto& [tv, map] : a_.axis_map) {
      bool per_row = true;
      for (size_t i = 0; i < map.size(); ++i) {
        if (map[i] >= 0 && a_.reduced[map[i]] && !tv->logical()[i]->is_broadcast()) {
          per_row = false;
        }
      }
      a_.per_row[tv] = per_row;
    }
  }

  bool check_reduction_inputs() {
    for (const Expr* expr : reductions_) {
      if (a_.is_per_row(expr->input(0)->as<TensorView>())) {
        return reject("a reduction reduces only broadcast axes");
      }
    }
    for (const Expr* expr : a_.outer_reductions) {
      if (a_.is_per_row(expr->input(0)->as<TensorView>())) {
        return reject("an outer reduction reduces a per-row value");
      }
    }
    return true;
  }

  bool collect_inputs() {
    for (const Val* in : fusion_.inputs()) {
      if (!in->is<TensorView>()) {
        continue;
      }
      const auto* tv = in->as<TensorView>();
      if (!a_.axis_map.count(tv)) {
        continue;
      }
      if (!is_codegen_dtype(tv->dtype())) {
        return reject(std::string("an input is ") + name_of(tv->dtype()));
      }
      if (tv->is_cpu_scalar()) {
        a_.value_inputs.push_back(tv);
      } else {
        a_.inputs.push_back(tv);
      }
    }
    return true;
  }

  void assign_phases() {
    for (const Expr* expr : a_.exprs) {
      int phase = 0;
      for (size_t i = 0; i < expr->inputs().size(); ++i) {
        const Val* in = expr->input(i);
        if (in->is<TensorView>()) {
          auto it = a_.phase.find(in->as<TensorView>());
          phase = std::max(phase, it == a_.phase.end() ? 0 : it->second);
        } else if ((!in->as<Scalar>()->is_constant() || constant_passed_by_value(*expr, i)) &&
            !expr->is<ExpandOp>() &&
            std::find(a_.value_inputs.begin(), a_.value_inputs.end(), in) ==
                a_.value_inputs.end()) {
          a_.value_inputs.push_back(in);
        }
      }
      if (is_reduction(expr)) {
        a_.last_element_phase = std::max(a_.last_element_phase, phase);
        ++phase;
      }
      for (const Val* out : expr->outputs()) {
        const auto* tv = out->as<TensorView>();
        a_.phase[tv] = phase;
        if (!a_.is_per_row(tv)) {
          a_.last_element_phase = std::max(a_.last_element_phase, phase);
        }
      }
    }
  }

  void collect_positions() {
    for (const Expr* expr : a_.exprs) {
      if (!is_position_expr(*expr)) {
        continue;
      }
      a_.position_tensors.push_back(expr->output(0)->as<TensorView>());
      if (expr->is<RngOp>() && !expr->as<RngOp>()->has_explicit_seed()) {
        a_.drawn_random_ops.push_back(expr->as<RngOp>());
      }
    }
  }

  const Fusion& fusion_;
  std::string* why_not_;
  ReductionAnalysis a_;
  std::vector<const Expr*> reductions_;
  std::vector<const Expr*> gathers_;
  std::vector<int> kept_axes_;
};

}  // namespace

bool is_row_gather(const Expr& expr, int64_t rank, const std::vector<int64_t>& reduced_axes) {
  if (!expr.is<GatherOp>()) {
    return false;
  }
  const int64_t dim = expr.as<GatherOp>()->dim();
  const auto* source = expr.input(0)->as<TensorView>();
  const auto* index = expr.input(1)->as<TensorView>();
  const auto extent_one = [dim](const TensorView* tv) {
    const IterDomain* id = tv->logical()[dim];
    return id->is_broadcast() || id->logical_extent()->is_constant_int(1);
  };
  return reduced_axes == std::vector<int64_t>{dim} && source->rank() == rank &&
      index->rank() == rank && source->definition() == nullptr && !extent_one(source) &&
      extent_one(index);
}

bool has_reduction(const Fusion& fusion) {
  for (const Expr* expr : fusion.exprs()) {
    if (is_reduction(expr)) {
      return true;
    }
  }
  return false;
}

std::optional<ReductionAnalysis> analyze_reduction(const Fusion& fusion, std::string* why_not) {
  return Analyzer(fusion, why_not).run();
}

int ReductionAnalysis::first_random_read_phase() const {
  const auto in_kernel = [this](const Expr* e) {
    return std::find(exprs.begin(), exprs.end(), e) != exprs.end();
  };
  int first = -1;
  for (const TensorView* random : position_tensors) {
    if (!random->definition()->is<RngOp>()) {
      continue;
    }
    std::vector<const TensorView*> stack = {random};
    std::unordered_set<const TensorView*> seen;
    while (!stack.empty()) {
      const TensorView* tv = stack.back();
      stack.pop_back();
      if (!seen.insert(tv).second) {
        continue;
      }
      const bool sink = std::find(outputs.begin(), outputs.end(), tv) != outputs.end() ||
          std::any_of(tv->uses().begin(), tv->uses().end(),
              [&](const Expr* use) { return is_reduction(use) && in_kernel(use); });
      if (sink) {
        first = first < 0 ? phase_of(tv) : std::min(first, phase_of(tv));
      }
      for (const Expr* use : tv->uses()) {
        if (!is_reduction(use) && in_kernel(use)) {
          stack.push_back(use->output(0)->as<TensorView>());
        }
      }
    }
  }
  return first;
}

std::vector<const TensorView*> ReductionAnalysis::exps_read_again() const {
  return read_again([](const PointwiseOp& op) { return op.op() == OpType::exp; });
}

std::vector<const TensorView*> ReductionAnalysis::selects_read_again() const {
  return read_again([](const PointwiseOp& op) { return op.op() == OpType::where; });
}

std::vector<const TensorView*> ReductionAnalysis::read_again(
    const std::function<bool(const PointwiseOp&)>& kind) const {
  std::vector<const TensorView*> result;
  for (const Expr* expr : exprs) {
    const auto* tv = expr->output(0)->as<TensorView>();
    if (!expr->is<PointwiseOp>() || !kind(*expr->as<PointwiseOp>()) ||
        tv->dtype() != DataType::Float || is_per_row(tv)) {
      continue;
    }
    const int own = phase_of(tv);
    bool read_in_own_phase = false;
    bool read_later = false;
    for (const Expr* use : tv->uses()) {
      if (std::find(exprs.begin(), exprs.end(), use) == exprs.end()) {
        continue;  // outside the kernel
      }
      if (is_reduction(use)) {
        read_in_own_phase = true;
        continue;
      }
      const auto* out = use->output(0)->as<TensorView>();
      if (!is_per_row(out)) {
        (phase_of(out) == own ? read_in_own_phase : read_later) = true;
      }
    }
    if (read_in_own_phase && read_later) {
      result.push_back(tv);
    }
  }
  return result;
}

bool may_update_in_place(
    const ReductionAnalysis& analysis, const Fusion& fusion, const TensorView& output) {
  const TensorView* input = fusion.aliased_input(&output);
  const auto kernel_reads = [&](const TensorView* tv) { return analysis.per_row.count(tv) > 0; };
  if (input == nullptr || !kernel_reads(&output) || !analysis.is_per_row(&output)) {
    return false;
  }
  const std::unordered_set<const Expr*> column_side(
      analysis.column_exprs.begin(), analysis.column_exprs.end());
  std::unordered_set<const Val*> reads_input = {input};
  for (const Expr* expr : fusion.exprs()) {
    const bool reads = std::any_of(expr->inputs().begin(), expr->inputs().end(),
        [&](const Val* in) { return reads_input.count(in) > 0; });
    if (!reads) {
      continue;
    }
    if (is_reduction(expr) || expr->is<GatherOp>() || column_side.count(expr)) {
      return false;
    }
    for (const Val* out : expr->outputs()) {
      const auto* tv = out->is<TensorView>() ? out->as<TensorView>() : nullptr;
      if (tv == nullptr || !kernel_reads(tv) || !analysis.is_per_row(tv)) {
        return false;
      }
      reads_input.insert(out);
    }
  }
  return true;
}

bool ReductionAnalysis::is_per_column(const TensorView* tv) const {
  const std::vector<int>& map = axis_map.at(tv);
  for (size_t i = 0; i < map.size(); ++i) {
    if (map[i] >= 0 && !reduced[map[i]] && !tv->logical()[i]->is_broadcast()) {
      return false;
    }
  }
  return true;
}

namespace {

bool is_where(const Expr& expr) {
  return expr.is<PointwiseOp>() && expr.as<PointwiseOp>()->op() == OpType::where;
}

// where(c, x, ±inf) or where(c, ±inf, x): a masked fill.
bool is_masked_fill(const Expr& expr) {
  if (!is_where(expr)) {
    return false;
  }
  for (size_t i = 1; i < 3; ++i) {
    const Val* v = expr.input(i);
    if (v->is<Scalar>() && v->as<Scalar>()->is_constant() && v->as<Scalar>()->value().is_double() &&
        std::isinf(v->as<Scalar>()->value().as_double())) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::vector<const Expr*> ReductionAnalysis::masked_choices() const {
  const auto uses_of = [this](const Val* v) {
    std::vector<const Expr*> uses;
    for (const Expr* e : exprs) {
      if (e->reads(v)) {
        uses.push_back(e);
      }
    }
    return uses;
  };
  const auto is_output = [this](const Val* v) {
    return std::find(outputs.begin(), outputs.end(), v) != outputs.end();
  };
  std::vector<const Expr*> wheres;
  for (const TensorView* random : position_tensors) {
    if (!random->definition()->is<RngOp>()) {
      continue;
    }
    if (is_output(random)) {
      return {};
    }
    for (const Expr* test : uses_of(random)) {
      const Val* keep = test->output(0);
      if (keep->dtype() != DataType::Bool || is_output(keep)) {
        return {};
      }
      for (const Expr* where : uses_of(keep)) {
        if (!is_where(*where) || where->input(1) == keep || where->input(2) == keep) {
          return {};
        }
        if (std::find(wheres.begin(), wheres.end(), where) == wheres.end()) {
          wheres.push_back(where);
        }
      }
    }
  }
  // Their value operands, walked back through everything that makes them.
  bool masked = false;
  std::vector<const Val*> stack;
  for (const Expr* where : wheres) {
    stack.push_back(where->input(1));
    stack.push_back(where->input(2));
  }
  std::unordered_set<const Val*> seen;
  while (!stack.empty()) {
    const Val* v = stack.back();
    stack.pop_back();
    const Expr* def = v->definition();
    if (!seen.insert(v).second || def == nullptr) {
      continue;
    }
    if (def->is<RngOp>()) {
      return {};
    }
    masked = masked || is_masked_fill(*def);
    stack.insert(stack.end(), def->inputs().begin(), def->inputs().end());
  }
  return masked ? wheres : std::vector<const Expr*>{};
}

}  // namespace nvfuse
