// Prints a Fusion (a segment of a cut fusion) back as the body of a Python
// definition, so fd.segment() can hand each segment to the user as a
// FusionDefinition of its own. Tensor inputs are printed symbolic (any
// size and layout) and scalar inputs stay inputs; but the IR keeps no
// symbolic name for the sizes an op takes (a reshape's -1, an expand's or
// a full's shape, slice bounds, pad widths), so those are printed as their
// values in one call, and the definition is specialized to them.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "ir/fusion.h"

namespace nvfuse {

// `size_of(s)`: the concrete value of a symbolic size or index scalar for
// the call being printed, nullopt when unknown (a size only an ATen
// segment's result knows). Lines read `T3 =
// fd.ops.add(T0, T1)`, one per input, expr and output, with `fd` the
// definition. A random op whose seed is drawn from torch prints without
// one (run alone, the segment draws its own). An UnsupportedError names
// the first expr it cannot print (internal ops).
std::string fusion_to_python(
    const Fusion& fusion, const std::function<std::optional<int64_t>(const Scalar*)>& size_of);

}  // namespace nvfuse
