#include "segment/reduction_segmenter.h"

#include <map>
#include <set>
#include <tuple>

namespace nvfuse {

namespace {

// A reduction's class: its input rank, reduced axes, and the input's sizes
// where they are constants (-1 where symbolic). Reductions of one class
// share a kernel, which walks one shape (the reduction analysis refuses
// constant sizes that differ): a column sum over 768 columns and one over
// 256 are two classes. Symbolic sizes that differ at run time are caught
// there (the reduction executor declines them).
struct ReductionClass {
  int64_t rank;
  std::vector<int64_t> reduced_axes;
  std::vector<int64_t> sizes;
  bool operator<(const ReductionClass& other) const {
    return std::tie(rank, reduced_axes, sizes) <
        std::tie(other.rank, other.reduced_axes, other.sizes);
  }
};

std::optional<ReductionClass> class_of(const Expr* expr) {
  if (!is_reduction(expr)) {
    return std::nullopt;
  }
  const auto* in = expr->input(0)->as<TensorView>();
  std::vector<int64_t> sizes;
  for (const IterDomain* id : in->logical()) {
    sizes.push_back(id->logical_extent()->constant_int().value_or(-1));
  }
  return ReductionClass{in->rank(), reduced_axes_of(*expr), std::move(sizes)};
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
    const Fusion& fusion, std::string* why_not) {
  std::map<std::set<ReductionClass>, std::vector<size_t>> groups;
  const auto& outputs = fusion.outputs();
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::set<ReductionClass> classes = classes_upstream_of(outputs[i]);
    if (classes.size() > 1) {
      if (why_not != nullptr) {
        *why_not = "output " + std::to_string(i) + " depends on reductions over different axes";
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
