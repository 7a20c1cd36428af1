// Integer arithmetic on extents, folded when the operands are constants so
// that printed domains read `iS3{8}` rather than `iS3{ceil_div(32, 4)}`.
#pragma once

#include "ir/scalar.h"

namespace nvfuse {

Scalar* extent_mul(Scalar* a, Scalar* b);
Scalar* extent_ceil_div(Scalar* a, Scalar* b);

}  // namespace nvfuse
