#include "schedule/pointwise_analysis.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <unordered_set>

#include "ir/all_exprs.h"

namespace nvfuse {

bool is_codegen_dtype(DataType dtype) {
  switch (dtype) {
    case DataType::Double:
    case DataType::Float:
    case DataType::Half:
    case DataType::BFloat16:
    case DataType::Int:
    case DataType::Int32:
    case DataType::Index:
    case DataType::Bool:
      return true;
    default:
      return false;
  }
}

namespace {

bool reject(std::string* why_not, const std::string& reason) {
  if (why_not != nullptr) {
    *why_not = reason;
  }
  return false;
}

}  // namespace

bool is_elementwise_expr(const Expr& expr) {
  return expr.is<PointwiseOp>() || expr.is<CastOp>() || expr.is<BroadcastOp>() ||
      expr.is<ExpandOp>();
}

bool makes_codegen_values(const Expr& expr, std::string* why_not) {
  for (const Val* v : expr.outputs()) {
    if (!is_codegen_dtype(v->dtype())) {
      return reject(why_not, std::string("it has ") + name_of(v->dtype()) + " values");
    }
  }
  return true;
}

std::optional<std::vector<int>> operand_axis_map(
    const Expr& expr, const TensorView& operand, const std::vector<int>& result_map) {
  std::vector<int> map;
  if (expr.is<SqueezeOp>()) {
    // The squeezed (size-1) axes map to no reference axis.
    map = result_map;
    for (int64_t d : expr.as<SqueezeOp>()->dims()) {
      map.insert(map.begin() + d, -1);
    }
  } else if (expr.is<BroadcastOp>()) {
    const auto& is_new = expr.as<BroadcastOp>()->is_broadcast_dim();
    for (size_t i = 0; i < is_new.size(); ++i) {
      if (!is_new[i]) {
        map.push_back(result_map[i]);
      }
    }
  } else if (operand.rank() == static_cast<int64_t>(result_map.size())) {
    map = result_map;
  } else if (operand.rank() != 0) {
    return std::nullopt;
  }
  return map;
}

bool propagate_axis_maps(const std::vector<Expr*>& exprs, AxisMaps& maps, std::string* why_not) {
  for (auto it = exprs.rbegin(); it != exprs.rend(); ++it) {
    const Expr* expr = *it;
    const Val* out = expr->output(0);
    if (!out->is<TensorView>() || is_reduction(expr)) {
      continue;  // scalar arithmetic runs on the host
    }
    auto found = maps.find(out->as<TensorView>());
    if (found == maps.end()) {
      continue;  // feeds nothing the kernel writes
    }
    const std::vector<int> out_map = found->second;
    for (const Val* in : expr->inputs()) {
      if (!in->is<TensorView>() || (expr->is<GatherOp>() && in == expr->input(0))) {
        continue;  // a gather's source: the reduction analysis maps it
      }
      const auto* tv = in->as<TensorView>();
      const auto in_map = operand_axis_map(*expr, *tv, out_map);
      if (!in_map.has_value()) {
        return reject(why_not, "an operand's rank differs from its result's");
      }
      if (!assign_axis_map(maps, tv, *in_map)) {
        return reject(why_not, tv->name() + " is reached with two different axis maps");
      }
    }
  }
  return true;
}

std::optional<std::vector<const TensorView*>> iteration_outputs(
    const Fusion& fusion, std::string* why_not) {
  // The first output (not a fusion input) defines the iteration space;
  // every other must iterate over the same axes.
  std::vector<const TensorView*> outputs;
  std::unordered_set<const TensorView*> seen;
  for (const Val* out : fusion.outputs()) {
    const auto* tv = out->as<TensorView>();
    if (fusion.is_input(tv) || !seen.insert(tv).second) {
      continue;
    }
    if (!is_codegen_dtype(tv->dtype())) {
      reject(why_not, std::string("an output is ") + name_of(tv->dtype()));
      return std::nullopt;
    }
    for (const IterDomain* id : tv->logical()) {
      if (id->is_expanded()) {
        reject(why_not, tv->name() + " is an expanded (stride-0) output");
        return std::nullopt;
      }
    }
    if (!outputs.empty()) {
      const TensorView* first = outputs.front();
      if (tv->rank() != first->rank()) {
        reject(why_not, "outputs have different ranks");
        return std::nullopt;
      }
      for (int64_t axis = 0; axis < tv->rank(); ++axis) {
        if (tv->logical()[axis]->is_broadcast() != first->logical()[axis]->is_broadcast()) {
          reject(why_not, "an output is broadcast where another is not");
          return std::nullopt;
        }
        // Known now to differ: the kernel would decline every launch.
        const auto size = tv->logical()[axis]->logical_extent()->constant_int();
        const auto first_size = first->logical()[axis]->logical_extent()->constant_int();
        if (size.has_value() && first_size.has_value() && *size != *first_size) {
          reject(why_not, "outputs have different sizes");
          return std::nullopt;
        }
      }
    }
    outputs.push_back(tv);
  }
  if (outputs.empty()) {
    reject(why_not, "it writes no new tensor");
    return std::nullopt;
  }
  return outputs;
}

bool assign_axis_map(AxisMaps& maps, const TensorView* tv, const std::vector<int>& map) {
  auto [it, inserted] = maps.emplace(tv, map);
  if (inserted || it->second == map) {
    return true;
  }
  std::vector<int>& recorded = it->second;
  if (recorded.size() != map.size()) {
    return false;
  }
  for (size_t axis = 0; axis < map.size(); ++axis) {
    const IterDomain* id = tv->logical()[axis];
    const bool size_one = id->is_broadcast() && !id->is_expanded();
    if (recorded[axis] != map[axis] && !size_one) {
      return false;
    }
  }
  for (size_t axis = 0; axis < map.size(); ++axis) {
    if (recorded[axis] != map[axis]) {
      recorded[axis] = -1;
    }
  }
  return true;
}

namespace {

// Ops whose CUDA math function is a long inlined routine (libdevice's
// accurate sinf, expf, tanhf... with their slow paths), not a few
// instructions.
bool is_heavy_math(OpType op) {
  static const std::set<OpType> heavy = {OpType::acos, OpType::acosh, OpType::asin, OpType::asinh,
      OpType::atan, OpType::atanh, OpType::cos, OpType::cosh, OpType::erf, OpType::erfc,
      OpType::erfcinv, OpType::erfinv, OpType::exp, OpType::exp2, OpType::expm1, OpType::lgamma,
      OpType::log, OpType::log10, OpType::log1p, OpType::log2, OpType::sigmoid, OpType::sin,
      OpType::sinh, OpType::tan, OpType::tanh, OpType::pow, OpType::atan2};
  return heavy.count(op) > 0;
}

int heavy_math_ops_of(const Fusion& fusion) {
  int count = 0;
  for (const Expr* expr : fusion.exprs()) {
    if (expr->is<PointwiseOp>() && is_heavy_math(expr->as<PointwiseOp>()->op())) {
      ++count;
    }
  }
  return count;
}

}  // namespace

std::optional<PointwiseAnalysis> analyze_pointwise(const Fusion& fusion, std::string* why_not) {
  PointwiseAnalysis analysis;
  for (const Expr* expr : fusion.exprs()) {
    if (!is_elementwise_expr(*expr)) {
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
  for (const TensorView* tv : *outputs) {
    analysis.outputs.push_back(tv);
    std::vector<int> identity(tv->rank());
    std::iota(identity.begin(), identity.end(), 0);
    analysis.axis_map.emplace(tv, identity);
  }
  analysis.rank = static_cast<int>(outputs->front()->rank());
  if (!propagate_axis_maps(fusion.exprs(), analysis.axis_map, why_not)) {
    return std::nullopt;
  }

  for (const Val* in : fusion.inputs()) {
    if (!in->is<TensorView>()) {
      continue;
    }
    const auto* tv = in->as<TensorView>();
    if (!analysis.axis_map.count(tv)) {
      continue;  // unused by the kernel
    }
    if (!is_codegen_dtype(tv->dtype())) {
      reject(why_not, std::string("an input is ") + name_of(tv->dtype()));
      return std::nullopt;
    }
    if (tv->is_cpu_scalar()) {
      analysis.value_inputs.push_back(tv);
    } else {
      analysis.inputs.push_back(tv);
    }
  }
  analysis.heavy_math_ops = heavy_math_ops_of(fusion);
  // Symbolic scalars used by tensor exprs are computed on the host, and
  // the constants kernels take by value are passed as they are.
  for (const Expr* expr : fusion.exprs()) {
    if (!expr->output(0)->is<TensorView>() || expr->is<ExpandOp>()) {
      continue;
    }
    for (size_t i = 0; i < expr->inputs().size(); ++i) {
      const Val* in = expr->input(i);
      if (in->is<Scalar>() &&
          (!in->as<Scalar>()->is_constant() || constant_passed_by_value(*expr, i)) &&
          std::find(analysis.value_inputs.begin(), analysis.value_inputs.end(), in) ==
              analysis.value_inputs.end()) {
        if (!is_codegen_dtype(in->dtype())) {
          reject(why_not, std::string("a scalar is ") + name_of(in->dtype()));
          return std::nullopt;
        }
        analysis.value_inputs.push_back(in);
      }
    }
  }
  return analysis;
}

}  // namespace nvfuse
