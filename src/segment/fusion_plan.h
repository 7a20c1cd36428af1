// The segmenter's whole answer for a prepared fusion: cut at its ATen ops
// and bookended views into parts (aten_segmenter.h), each planned in turn
// as kernel segments; or, when nothing cuts it, its kernel segments
// (kernel_segments.h), unless some of them would run on the reference
// evaluator and a split into one-kernel groups (merge_groups.h) runs it as
// kernels. The runtime turns the plan into executors and a runtime program
// (runtime/runtime_program.h); it decides nothing about segments itself.
#pragma once

#include <vector>

#include "ir/fusion.h"
#include "segment/aten_segmenter.h"
#include "segment/kernel_segments.h"

namespace nvfuse {

struct FusionPlan {
  std::vector<FusionSegment> parts;  // non-empty: the fusion is cut
  KernelSegmentPlan kernels;         // when it is not
};

FusionPlan plan_fusion(const Fusion& fusion);

}  // namespace nvfuse
