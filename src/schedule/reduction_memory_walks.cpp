#include "schedule/reduction_memory_walks.h"

namespace nvfuse {

namespace {

// The reference axis that is innermost in memory in the first per-element
// input (by its stride order; the last axis without one); nullopt when no
// input says.
std::optional<int> innermost_reference_axis(const ReductionAnalysis& a) {
  for (const TensorView* tv : a.inputs) {
    if (a.is_per_row(tv) || tv->rank() == 0) {
      continue;
    }
    const auto order = tv->domain().allocation_permutation();
    const int64_t axis = order.has_value() && !order->empty() ? order->back() : tv->rank() - 1;
    const int mapped = a.axis_map.at(tv)[axis];
    if (mapped >= 0 && !tv->logical()[axis]->is_broadcast()) {
      return mapped;
    }
  }
  return std::nullopt;
}

// The reference axes that some input spans (an axis there that is not of
// size one, or is expanded): the others have extent one, and a walk skips
// them.
std::vector<bool> spanned_reference_axes(const ReductionAnalysis& a) {
  std::vector<bool> spanned(a.reduced.size(), false);
  for (const TensorView* tv : a.inputs) {
    const std::vector<int>& map = a.axis_map.at(tv);
    for (size_t i = 0; i < map.size(); ++i) {
      const IterDomain* id = tv->logical()[i];
      if (map[i] >= 0 && (!id->is_broadcast() || id->is_expanded())) {
        spanned[map[i]] = true;
      }
    }
  }
  return spanned;
}

// Along the spanned reduced axes, `tv` is at stride 0 on some (expanded,
// of size one, or without an axis there: broadcast inside the fusion, a
// pooling's gradient [N, C] reshaped and expanded over H and W) and in
// memory on others.
bool mixes_expanded_and_memory_reduced_axes(
    const ReductionAnalysis& a, const std::vector<bool>& spanned, const TensorView& tv) {
  const std::vector<int>& map = a.axis_map.at(&tv);
  std::vector<bool> in_memory_along(a.reduced.size(), false);
  for (size_t i = 0; i < map.size(); ++i) {
    const IterDomain* id = tv.logical()[i];
    if (map[i] >= 0 && !id->is_broadcast() && !id->is_expanded()) {
      in_memory_along[map[i]] = true;
    }
  }
  bool at_stride_zero = false;
  bool in_memory = false;
  for (size_t axis = 0; axis < spanned.size(); ++axis) {
    if (a.reduced[axis] && spanned[axis]) {
      (in_memory_along[axis] ? in_memory : at_stride_zero) = true;
    }
  }
  return at_stride_zero && in_memory;
}

}  // namespace

std::optional<std::string> why_reduced_axes_are_no_one_walk(const ReductionAnalysis& analysis) {
  const std::vector<bool> spanned = spanned_reference_axes(analysis);
  for (const TensorView* tv : analysis.inputs) {
    if (!analysis.is_per_row(tv) &&
        mixes_expanded_and_memory_reduced_axes(analysis, spanned, *tv)) {
      return tv->name() +
          " is at stride 0 along some reduced axes and in memory along others: the reduced axes "
          "are not one strided axis in it";
    }
  }
  return std::nullopt;
}

std::optional<std::string> why_later_phases_walk_across_memory(const ReductionAnalysis& analysis) {
  if (analysis.last_element_phase == 0) {
    return std::nullopt;
  }
  const std::optional<int> innermost = innermost_reference_axis(analysis);
  if (innermost.has_value() && !analysis.reduced[*innermost]) {
    return "its work after the reduction would walk rows across memory: a kept axis is "
           "innermost in memory";
  }
  return std::nullopt;
}

}  // namespace nvfuse
