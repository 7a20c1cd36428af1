#include "segment/kernel_segments.h"

#include <algorithm>

#include "schedule/reduction_analysis.h"
#include "segment/reduction_segmenter.h"

namespace nvfuse {

namespace {

KernelSegment segment_keeping(const Fusion& fusion, std::vector<size_t> positions) {
  KernelSegment segment;
  segment.owned = fusion.clone();
  segment.owned->retain_outputs(positions);
  segment.choice = choose_kernel(*segment.owned, &segment.kind, &segment.why_no_kernel);
  segment.outputs = std::move(positions);
  return segment;
}

}  // namespace

std::vector<KernelSegment> split_by_reduction_class(const Fusion& fusion, std::string* why_not) {
  std::vector<KernelSegment> split;
  auto groups =
      has_reduction(fusion) ? group_outputs_by_reduction_axes(fusion, why_not) : std::nullopt;
  if (!groups.has_value() || groups->size() < 2) {
    return split;
  }
  for (std::vector<size_t>& positions : *groups) {
    split.push_back(segment_keeping(fusion, std::move(positions)));
  }
  return split;
}

KernelSegmentPlan plan_kernel_segments(const Fusion& fusion) {
  KernelSegment whole;
  whole.choice = choose_kernel(fusion, &whole.kind, &whole.why_no_kernel);
  for (size_t i = 0; i < fusion.outputs().size(); ++i) {
    whole.outputs.push_back(i);
  }
  std::string why_not_split;
  std::vector<KernelSegment> split = split_by_reduction_class(fusion, &why_not_split);
  KernelSegmentPlan plan;
  if (whole.choice.has_value()) {
    plan.segments.push_back(std::move(whole));
    plan.fallback = std::move(split);
  } else if (!split.empty()) {
    plan.segments = std::move(split);
  } else {
    if (!why_not_split.empty()) {
      whole.why_no_kernel += "; not split into segments: " + why_not_split;
    }
    plan.segments.push_back(std::move(whole));
  }
  return plan;
}

bool runs_as_kernels(const Fusion& fusion) {
  if (is_one_kernel(fusion)) {
    return true;
  }
  std::string why_not;
  const std::vector<KernelSegment> split = split_by_reduction_class(fusion, &why_not);
  return !split.empty() && std::all_of(split.begin(), split.end(), [](const KernelSegment& s) {
    return s.choice.has_value();
  });
}

}  // namespace nvfuse
