// Which generated kernel takes a fusion (or a segment's fusion) whole: the
// segmenter's question, answered from the schedulers' analyses alone, so
// that segmentation decides without the runtime. A fusion with a reduction
// is the reduction kernel's or no kernel's; otherwise the pointwise kernel
// takes it, or else the coordinate kernel (reads at other coordinates,
// values made from coordinates), except a lone reshape, which stays an ATen
// reshape (a view where the layout allows). The runtime builds the chosen
// kernel's executor from the analysis (runtime/fusion_executor.cpp);
// kernel_segments.h plans a fusion no one kernel takes.
#pragma once

#include <optional>
#include <string>
#include <variant>

#include "ir/fusion.h"
#include "schedule/coordinate_analysis.h"
#include "schedule/pointwise_analysis.h"
#include "schedule/reduction_analysis.h"

namespace nvfuse {

enum class KernelKind { kReduction, kPointwise, kCoordinate };

// "reduction", "pointwise", "coordinate": a segment's kind in dumps and
// summaries.
const char* name_of(KernelKind kind);

struct KernelChoice {
  KernelKind kind;
  std::variant<ReductionAnalysis, PointwiseAnalysis, CoordinateAnalysis> analysis;
};

// The kernel that takes `fusion` whole, or nullopt with the reason in
// `why_not`. `kind` is set to the last kind tried (what a segment without a
// kernel reports).
std::optional<KernelChoice> choose_kernel(
    const Fusion& fusion, std::string* kind, std::string* why_not);

// One generated kernel takes `fusion` whole.
bool is_one_kernel(const Fusion& fusion);

}  // namespace nvfuse
