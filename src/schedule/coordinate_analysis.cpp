#include "schedule/coordinate_analysis.h"

#include <algorithm>
#include <unordered_set>

#include "schedule/pointwise_analysis.h"

namespace nvfuse {

namespace {

bool reject(std::string* why_not, const std::string& reason) {
  if (why_not != nullptr) {
    *why_not = reason;
  }
  return false;
}

Scalar* extent_of(const Val* tv, int64_t axis) {
  return tv->as<TensorView>()->logical()[axis]->logical_extent();
}

// The cumsums, when the scan kernel can walk them: one axis of the
// iteration space for all (not a broadcast axis of theirs), their results
// and everything computed from them read only by elementwise exprs and
// cumsums (at the element the walk is at) and outputs.
bool find_scans(const Fusion& fusion, CoordinateAnalysis& analysis, std::string* why_not) {
  const int64_t rank = analysis.outputs.empty() ? 0 : analysis.outputs.front()->rank();
  std::vector<const Val*> walked_values;  // read where the walk is
  for (const Expr* expr : fusion.exprs()) {
    if (!expr->is<CumsumOp>()) {
      continue;
    }
    const auto* scan = expr->as<CumsumOp>();
    const auto* in = scan->input(0)->as<TensorView>();
    if (rank == 0 || scan->output(0)->as<TensorView>()->rank() != rank) {
      return reject(why_not, "a cumsum's rank differs from the outputs' (or is 0)");
    }
    if (analysis.scan_axis >= 0 && scan->dim() != analysis.scan_axis) {
      return reject(why_not, "its cumsums run along different axes");
    }
    if (in->logical()[scan->dim()]->is_broadcast()) {
      // The walk follows the iteration space's extent, not this size-1 axis.
      return reject(why_not, "a cumsum runs along a broadcast axis");
    }
    analysis.scan_axis = scan->dim();
    analysis.scans.push_back(scan);
    walked_values.push_back(scan->output(0));
  }
  // A value computed from a cumsum's result is only known where the walk
  // is: every expr downstream must read its operands at its own element.
  std::unordered_set<const Val*> seen;
  while (!walked_values.empty()) {
    const Val* v = walked_values.back();
    walked_values.pop_back();
    if (!seen.insert(v).second) {
      continue;
    }
    for (const Expr* use : v->uses()) {
      if (!use->is<CumsumOp>() && (!is_elementwise_expr(*use) || use->is<BroadcastOp>())) {
        return reject(why_not, "a cumsum's result reaches a " + use->op_name());
      }
      walked_values.insert(walked_values.end(), use->outputs().begin(), use->outputs().end());
    }
  }
  return true;
}

// The fusion's scatter, when the kernel can walk its index tensor: one
// scatter, its result the fusion's only output and read by nothing in it,
// its input a tensor the fusion reads (a copy of it is what the kernel
// writes into: the input must be whole before the first write), no cumsum.
bool find_scatter(const Fusion& fusion, CoordinateAnalysis& analysis, std::string* why_not) {
  const auto exprs = fusion.exprs();
  for (const Expr* expr : exprs) {
    if (!expr->is<ScatterOp>()) {
      continue;
    }
    if (analysis.scatter != nullptr) {
      return reject(why_not, "it has two scatters");
    }
    analysis.scatter = expr->as<ScatterOp>();
  }
  const ScatterOp* scatter = analysis.scatter;
  if (scatter == nullptr) {
    return true;
  }
  const auto* out = scatter->output(0)->as<TensorView>();
  // (A segment's fusion may hold uses of `out` by exprs of other segments:
  // only the exprs computing its outputs count.)
  const bool read_inside =
      std::any_of(exprs.begin(), exprs.end(), [&](const Expr* e) { return e->reads(out); });
  if (analysis.outputs.size() != 1 || analysis.outputs.front() != out || read_inside) {
    return reject(why_not, "a scatter's result is not the fusion's only output");
  }
  const auto* in = scatter->input(0)->as<TensorView>();
  if (!fusion.is_input(in) || in->is_cpu_scalar()) {
    return reject(why_not, "a scatter's input is computed in the fusion");
  }
  if (out->rank() == 0) {
    return reject(why_not, "a scatter of a 0-d tensor");
  }
  if (!analysis.scans.empty()) {
    return reject(why_not, "it has a scatter and a cumsum");
  }
  return true;
}

}  // namespace

bool is_coordinate_expr(const Expr& expr) { return (kernels_of(expr.kind()) & kCoordinate) != 0; }

bool is_position_expr(const Expr& expr) { return expr.is<IotaOp>() || expr.is<RngOp>(); }

std::vector<const Scalar*> scalars_read_by(const Expr& expr) {
  std::vector<const Scalar*> scalars;
  auto input = [&](size_t i) { scalars.push_back(expr.input(i)->as<Scalar>()); };
  const Val* in = expr.input(0);
  switch (expr.kind()) {
    case ExprKind::SliceOp:
      for (int64_t axis = 0; axis < in->as<TensorView>()->rank(); ++axis) {
        input(1 + 3 * axis);  // start
        scalars.push_back(extent_of(in, axis));
      }
      break;
    case ExprKind::PadOp:
      input(1);  // the pad value
      for (int64_t axis = 0; axis < in->as<TensorView>()->rank(); ++axis) {
        input(2 + 2 * axis);  // before
        scalars.push_back(extent_of(in, axis));
      }
      break;
    case ExprKind::CatOp:
      for (const Val* part : expr.inputs()) {
        scalars.push_back(extent_of(part, expr.as<CatOp>()->dim()));
      }
      break;
    case ExprKind::SelectOp:
      input(1);
      scalars.push_back(extent_of(in, expr.as<SelectOp>()->dim()));
      break;
    case ExprKind::IndexSelectOp:
      scalars.push_back(extent_of(in, expr.as<IndexSelectOp>()->dim()));
      break;
    case ExprKind::GatherOp:
      scalars.push_back(extent_of(in, expr.as<GatherOp>()->dim()));
      break;
    case ExprKind::EmbeddingFwdOp:
      scalars.push_back(extent_of(expr.input(1), 0));
      break;
    case ExprKind::ScatterOp:  // the range its indices are checked against
      scalars.push_back(extent_of(in, expr.as<ScatterOp>()->dim()));
      break;
    case ExprKind::ReshapeOp:
      // The output's extents ravel the position, the input's unravel it.
      for (const Val* tv : {static_cast<const Val*>(expr.output(0)), in}) {
        for (int64_t axis = 0; axis < tv->as<TensorView>()->rank(); ++axis) {
          scalars.push_back(extent_of(tv, axis));
        }
      }
      break;
    case ExprKind::TriuOp:
      input(1);
      break;
    case ExprKind::FullOp:
      input(0);
      break;
    case ExprKind::IotaOp:
      input(1);
      input(2);
      break;
    case ExprKind::RngOp: {
      const size_t params = expr.as<RngOp>()->first_size_input();
      for (size_t i = 0; i < params; ++i) {
        input(i);  // the two parameters, then an explicit seed and offset
      }
      const auto* out = expr.output(0)->as<TensorView>();
      for (int64_t axis = 0; axis < out->rank(); ++axis) {
        scalars.push_back(extent_of(out, axis));
      }
      break;
    }
    default:
      for (const Val* v : expr.inputs()) {
        if (v->is<Scalar>()) {
          scalars.push_back(v->as<Scalar>());
        }
      }
  }
  return scalars;
}

std::optional<CoordinateAnalysis> analyze_coordinates(const Fusion& fusion, std::string* why_not) {
  CoordinateAnalysis analysis;
  std::unordered_set<const Val*> used;  // tensors the outputs depend on
  for (const Expr* expr : fusion.exprs()) {
    if (!expr->output(0)->is<TensorView>()) {
      continue;  // scalar arithmetic runs on the host
    }
    if (!is_elementwise_expr(*expr) && !is_coordinate_expr(*expr)) {
      reject(why_not, std::string("it has a ") + name_of(expr->kind()));
      return std::nullopt;
    }
    if (!makes_codegen_values(*expr, why_not)) {
      return std::nullopt;
    }
  }

  auto outputs = iteration_outputs(fusion, why_not);
  if (!outputs.has_value()) {
    return std::nullopt;
  }
  analysis.outputs = std::move(*outputs);
  if (!find_scans(fusion, analysis, why_not) || !find_scatter(fusion, analysis, why_not)) {
    return std::nullopt;
  }

  // What the outputs depend on, walking back from them.
  std::vector<const Val*> pending(analysis.outputs.begin(), analysis.outputs.end());
  while (!pending.empty()) {
    const Val* v = pending.back();
    pending.pop_back();
    if (!used.insert(v).second || v->definition() == nullptr || !v->is<TensorView>()) {
      continue;
    }
    for (const Val* in : v->definition()->inputs()) {
      pending.push_back(in);
    }
  }
  auto add_value_input = [&](const Val* v) {
    if (std::find(analysis.value_inputs.begin(), analysis.value_inputs.end(), v) ==
        analysis.value_inputs.end()) {
      analysis.value_inputs.push_back(v);
    }
  };
  for (const Val* in : fusion.inputs()) {
    if (!in->is<TensorView>() || !used.count(in)) {
      continue;
    }
    const auto* tv = in->as<TensorView>();
    if (!is_codegen_dtype(tv->dtype())) {
      reject(why_not, std::string("an input is ") + name_of(tv->dtype()));
      return std::nullopt;
    }
    if (tv->is_cpu_scalar()) {
      add_value_input(tv);
    } else {
      analysis.inputs.push_back(tv);
    }
  }
  for (const Expr* expr : fusion.exprs()) {
    if (!expr->output(0)->is<TensorView>() || !used.count(expr->output(0))) {
      continue;
    }
    analysis.has_random_ops = analysis.has_random_ops || expr->is<RngOp>();
    if (expr->is<RngOp>() && !expr->as<RngOp>()->has_explicit_seed()) {
      analysis.drawn_random_ops.push_back(expr->as<RngOp>());
    }
    for (const Scalar* s : scalars_read_by(*expr)) {
      if (s->is_constant()) {
        continue;
      }
      if (!is_codegen_dtype(s->dtype())) {
        reject(why_not, std::string("a scalar is ") + name_of(s->dtype()));
        return std::nullopt;
      }
      add_value_input(s);
    }
    for (size_t i = 0; i < expr->inputs().size(); ++i) {
      if (constant_passed_by_value(*expr, i)) {
        add_value_input(expr->input(i));
      }
    }
  }
  return analysis;
}

}  // namespace nvfuse
