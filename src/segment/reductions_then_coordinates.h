// A fusion with reductions whose other work needs the coordinate kernel
// (slices, pads and permutes of reduced values: rotary embedding's
// backward after the sum over grouped-query heads) may run as its
// reductions with everything they read, then everything else, each split
// into the fewest kernels that take it. Next to reductions,
// segment_at_aten_ops cuts each coordinate expr into a kernel of its own, a
// launch and a round trip through memory each (that rotary backward was 23
// kernels); after the reductions, the rest has none, and the coordinate
// kernel takes the slices and pads with the work around them.
#pragma once

#include <optional>
#include <vector>

#include "ir/fusion.h"

namespace nvfuse {

struct ReductionsThenRest {
  std::vector<const Expr*> reductions;  // and every expr whose result they read
  std::vector<const Expr*> rest;
};

// `fusion`'s tensor exprs so split, each list in the fusion's order; nullopt
// when either would be empty.
std::optional<ReductionsThenRest> split_reductions_from_rest(const Fusion& fusion);

}  // namespace nvfuse
