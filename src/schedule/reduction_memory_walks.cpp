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

// Along the reduced axes, `tv` is expanded on some and in memory on others.
bool mixes_expanded_and_memory_reduced_axes(const ReductionAnalysis& a, const TensorView& tv) {
  const std::vector<int>& map = a.axis_map.at(&tv);
  bool expanded = false;
  bool in_memory = false;
  for (size_t i = 0; i < map.size(); ++i) {
    if (map[i] < 0 || !a.reduced[map[i]]) {
      continue;
    }
    const IterDomain* id = tv.logical()[i];
    if (id->is_expanded()) {
      expanded = true;
    } else if (!id->is_broadcast()) {
      in_memory = true;
    }
  }
  return expanded && in_memory;
}

}  // namespace

std::optional<std::string> why_reduced_axes_are_no_one_walk(const ReductionAnalysis& analysis) {
  for (const TensorView* tv : analysis.inputs) {
    if (!analysis.is_per_row(tv) && mixes_expanded_and_memory_reduced_axes(analysis, *tv)) {
      return tv->name() +
          " is expanded along some reduced axes and in memory along others: the reduced axes "
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
