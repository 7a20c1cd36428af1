// A minimal segmenter: a fusion whose reductions reduce different axes
// (layer-norm backward: per-row sums for dx, per-column sums for dgamma and
// dbeta) cannot be one reduction kernel, so its outputs are split into
// groups, one per set of reduction axes (and one for outputs without a
// reduction). Each group becomes a segment that recomputes what it needs
// from the fusion inputs: nothing intermediate is written to memory, and
// the pointwise work shared by groups is recomputed (cheap next to the
// extra read of the inputs that a materialized intermediate would cost).
// Outputs that depend on reductions over different axes (a sum of a sum)
// are not split here: aten_segmenter.h splits such fusions into kernels
// that pass intermediate tensors (merge_groups.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/fusion.h"

namespace nvfuse {

// Positions (in fusion.outputs()) of each segment's outputs, producers'
// order irrelevant since segments share nothing but inputs. nullopt (with
// the reason) when the fusion cannot be split this way; a single group when
// it needs no split.
std::optional<std::vector<std::vector<size_t>>> group_outputs_by_reduction_axes(
    const Fusion& fusion, std::string* why_not);

}  // namespace nvfuse
