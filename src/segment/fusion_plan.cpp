#include "segment/fusion_plan.h"

#include <algorithm>

namespace nvfuse {

FusionPlan plan_fusion(const Fusion& fusion) {
  FusionPlan plan;
  plan.parts = segment_at_aten_ops(fusion);
  if (!plan.parts.empty()) {
    return plan;
  }
  plan.kernels = plan_kernel_segments(fusion);
  const auto& segments = plan.kernels.segments;
  const bool all_kernels = std::all_of(segments.begin(), segments.end(),
      [](const KernelSegment& s) { return s.choice.has_value(); });
  if (!all_kernels) {
    // No plan makes kernels of the whole: split it like any kernel group.
    plan.parts = segment_at_aten_ops(fusion, /*split_uncut=*/true);
    if (!plan.parts.empty()) {
      plan.kernels = {};
    }
  }
  return plan;
}

}  // namespace nvfuse
