// Whether a reduction kernel's walk fits the memory of the tensors it
// reads: the reduction analysis asks these once it knows which tensors
// are per element and, for the second, the phases. Each returns why one
// kernel cannot take the fusion (the segmenter then cuts it), or nullopt.
#pragma once

#include <optional>
#include <string>

#include "schedule/reduction_analysis.h"

namespace nvfuse {

// The kernel walks the reduced axes of every tensor as one strided axis
// (reduction_walk.cpp). An input at stride 0 along some reduced axes
// (expanded, or broadcast inside the fusion) but laid out in memory along
// others cannot be walked so: a pooling's gradient [N, C] expanded over H
// and W, reduced over N, H and W next to a channels-last activation. Every
// launch declined it, and the reference evaluator ran the fusion op by op;
// the segmenter writes the work on such an input densely first instead.
std::optional<std::string> why_reduced_axes_are_no_one_walk(const ReductionAnalysis& analysis);

// Work after a reduction (a normalization, a softmax) is done by the
// inner-row walk, which reads each row's elements along the reduced axes.
// Where a kept axis is innermost in memory (a channels-last batch norm:
// channels innermost, reduced over N, H and W) those reads stride by a
// row's width, and the kernel ran at a few percent of bandwidth (a
// ResNet-50 batch-norm backward at batch 64 took 5 ms). The reduction
// alone walks columns at bandwidth and the work after it is pointwise, so
// the segmenter is asked for a kernel each.
std::optional<std::string> why_later_phases_walk_across_memory(const ReductionAnalysis& analysis);

}  // namespace nvfuse
