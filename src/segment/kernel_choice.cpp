#include "segment/kernel_choice.h"

#include <algorithm>

#include "ir/all_exprs.h"

namespace nvfuse {

namespace {

bool only_reshapes(const Fusion& fusion) {
  const auto exprs = fusion.exprs();
  return !exprs.empty() && std::all_of(exprs.begin(), exprs.end(), [](const Expr* e) {
    return !e->output(0)->is<TensorView>() || e->is<ReshapeOp>();
  });
}

}  // namespace

const char* name_of(KernelKind kind) {
  switch (kind) {
    case KernelKind::kReduction:
      return "reduction";
    case KernelKind::kPointwise:
      return "pointwise";
    case KernelKind::kCoordinate:
      return "coordinate";
  }
  return "";
}

std::optional<KernelChoice> choose_kernel(
    const Fusion& fusion, std::string* kind, std::string* why_not) {
  if (has_reduction(fusion)) {
    *kind = name_of(KernelKind::kReduction);
    if (auto analysis = analyze_reduction(fusion, why_not)) {
      return KernelChoice{KernelKind::kReduction, std::move(*analysis)};
    }
    return std::nullopt;
  }
  *kind = name_of(KernelKind::kPointwise);
  std::string why_not_pointwise;
  if (auto analysis = analyze_pointwise(fusion, &why_not_pointwise)) {
    return KernelChoice{KernelKind::kPointwise, std::move(*analysis)};
  }
  *kind = name_of(KernelKind::kCoordinate);
  if (only_reshapes(fusion)) {
    *why_not = "pointwise: " + why_not_pointwise +
        "; a reshape alone runs as an ATen reshape (a view where it can be)";
    return std::nullopt;
  }
  std::string why_not_coordinate;
  if (auto analysis = analyze_coordinates(fusion, &why_not_coordinate)) {
    return KernelChoice{KernelKind::kCoordinate, std::move(*analysis)};
  }
  *why_not = "pointwise: " + why_not_pointwise + "; coordinate: " + why_not_coordinate;
  return std::nullopt;
}

bool is_one_kernel(const Fusion& fusion) {
  std::string kind;
  std::string why_not;
  return choose_kernel(fusion, &kind, &why_not).has_value();
}

}  // namespace nvfuse
