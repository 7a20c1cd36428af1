// Integer arithmetic on extents, folded when the operands are constants so
// that printed domains read `iS3{8}` rather than `iS3{ceil_div(32, 4)}`.
#pragma once

#include "ir/scalar.h"

namespace nvfuse {

Scalar* extent_add(Scalar* a, Scalar* b);
Scalar* extent_sub(Scalar* a, Scalar* b);
Scalar* extent_mul(Scalar* a, Scalar* b);
Scalar* extent_div(Scalar* a, Scalar* b);  // exact division of sizes
Scalar* extent_ceil_div(Scalar* a, Scalar* b);
Scalar* extent_max(Scalar* a, Scalar* b);
Scalar* extent_min(Scalar* a, Scalar* b);
// Python's index normalization against `extent`: a negative index counts
// from the end; the result is clamped to [0, extent].
Scalar* normalized_index(Scalar* index, Scalar* extent);

}  // namespace nvfuse
