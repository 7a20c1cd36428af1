// How a fusion that is not cut at ATen ops (a whole fusion, or one part of
// a cut one) runs as generated kernels, decided from the schedulers'
// analyses alone: one kernel taking it whole; else one kernel per class of
// reduction axes (reduction_segmenter.h), each segment a clone keeping its
// outputs; else the whole on the reference evaluator, with the reasons.
// When one kernel takes it whole and it also splits by reduction class (an
// inner-outer reduction), the split is kept as the fallback for inputs the
// one kernel declines at run time (rows that do not fit it). The runtime
// builds each segment's executor from its KernelChoice.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/fusion.h"
#include "segment/kernel_choice.h"

namespace nvfuse {

struct KernelSegment {
  std::unique_ptr<Fusion> owned;       // a clone keeping `outputs`; null: the fusion itself
  std::optional<KernelChoice> choice;  // nullopt: the reference evaluator runs it
  std::string kind;                    // the kernel kind chosen or last tried
  std::string why_no_kernel;
  std::vector<size_t> outputs;  // positions among the fusion's outputs
};

struct KernelSegmentPlan {
  std::vector<KernelSegment> segments;
  std::vector<KernelSegment> fallback;  // empty but for the case above
};

KernelSegmentPlan plan_kernel_segments(const Fusion& fusion);

// One segment per reduction class of `fusion`, each keeping only its
// outputs; empty (with the reason in `why_not`, if any) when there is no
// such split.
std::vector<KernelSegment> split_by_reduction_class(const Fusion& fusion, std::string* why_not);

// Generated kernels take `fusion`: one, or one per class of reduction axes,
// each whole.
bool runs_as_kernels(const Fusion& fusion);

}  // namespace nvfuse
