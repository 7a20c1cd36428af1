// The memory layout of a segment boundary: a tensor one fused segment
// writes and another reads. Its consumers take any strides, so the
// layout is the producer's choice; row-major, the default, is wrong for a
// fusion whose tensors are all laid out otherwise. In a channels-last
// batch norm cut into its statistics and its normalization, row-major
// intermediates made the statistics kernel decline (its per-element
// outputs crossed the walk) and the normalization a transpose kernel,
// one per batch norm.
#pragma once

#include <optional>
#include <vector>

#include "ir/fusion.h"

namespace nvfuse {

// The allocation order (logical axes, outermost first) for boundary `tv`
// of `fusion`: the one every input and output of the fusion of `tv`'s
// rank and extents (where both are constants) has, when they agree on one
// that is not row-major; nullopt otherwise (no such tensor, they
// disagree, or `tv` has broadcast or expanded axes). Tensors with
// broadcast or expanded axes have no say: those axes have no memory.
std::optional<std::vector<int64_t>> boundary_allocation_order(
    const Fusion& fusion, const TensorView& tv);

// The allocation order a fused segment writes `tv` in: its own (a fusion
// output's stride_order), else boundary_allocation_order; nullopt for
// row-major.
std::optional<std::vector<int64_t>> written_allocation_order(
    const Fusion& fusion, const TensorView& tv);

// Lays out `piece`'s copy of each of `outputs` (boundaries of `fusion`,
// not its outputs) by boundary_allocation_order.
void lay_out_boundaries(
    const Fusion& fusion, const std::vector<const Val*>& outputs, const CloneMap& map);

}  // namespace nvfuse
