// One segment of a fusion: a clone holding only the given exprs, whose
// tensors made by other segments become inputs of their own (any layout),
// whose results read elsewhere (or returned) become its outputs, and which
// binds only the original inputs it reads or needs for a size.
#pragma once

#include <unordered_set>
#include <vector>

#include "segment/aten_segmenter.h"

namespace nvfuse {

// The segment of `fusion` that computes `members` (in the fusion's order).
// `recomputed`: exprs whose every reader computes its own copy
// (segment/recompute_input_work.h), so their results are no segment's output.
FusionSegment build_segment(const Fusion& fusion, const std::vector<const Expr*>& members,
    bool is_aten, const std::unordered_set<const Expr*>& recomputed = {});

}  // namespace nvfuse
