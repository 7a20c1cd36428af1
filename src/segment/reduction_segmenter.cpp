#include "segment/reduction_segmenter.h"

#include <map>
#include <set>

namespace nvfuse {

namespace {

// A reduction's class: its input rank and reduced axes.
using ReductionClass = std::pair<int64_t, std::vector<int64_t>>;

std::optional<ReductionClass> class_of(const Expr* expr) {
  if (!is_reduction(expr)) {
    return std::nullopt;
  }
  return ReductionClass{
      expr->input(0)->as<TensorView>()->rank(), reduced_axes_of(*expr)};
}

// The reduction classes `out` depends on.
std::set<ReductionClass> classes_upstream_of(const Val* out) {
  std::set<ReductionClass> classes;
  std::set<const Expr*> seen;
  std::vector<const Val*> stack{out};
  while (!stack.empty()) {
    const Val* v = stack.back();
    stack.pop_back();
    const Expr* def = v->definition();
    if (def == nullptr || !seen.insert(def).second) {
      continue;
    }
    if (auto c = class_of(def)) {
      classes.insert(*c);
    }
    for (const Val* in : def->inputs()) {
      stack.push_back(in);
    }
  }
  return classes;
}

}  // namespace

std::optional<std::vector<std::vector<size_t>>> group_outputs_by_reduction_axes(
    const Fusion& fusion,
    std::string* why_not) {
  std::map<std::set<ReductionClass>, std::vector<size_t>> groups;
  const auto& outputs = fusion.outputs();
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::set<ReductionClass> classes = classes_upstream_of(outputs[i]);
    if (classes.size() > 1) {
      if (why_not != nullptr) {
        *why_not = "output " + std::to_string(i) +
            " depends on reductions over different axes";
      }
      return std::nullopt;
    }
    if (fusion.aliased_input(outputs[i]) != nullptr) {
      if (why_not != nullptr) {
        *why_not = "it updates an input in place";
      }
      return std::nullopt;
    }
    groups[classes].push_back(i);
  }
  std::vector<std::vector<size_t>> result;
  for (auto& [classes, positions] : groups) {
    result.push_back(std::move(positions));
  }
  return result;
}

}  // namespace nvfuse
