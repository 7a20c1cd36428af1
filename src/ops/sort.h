// topk and argsort, with torch's semantics: values keep the operand's
// dtype, indices are Int (int64). Both run as ATen calls.
#pragma once

#include <utility>

#include "ir/scalar.h"
#include "ir/tensor_view.h"

namespace nvfuse {

// (values, indices) of the k largest (or smallest) elements along dim; k is
// an integer Scalar, a constant or a fusion input, and sizes that axis.
std::pair<TensorView*, TensorView*> topk(
    TensorView* in, Scalar* k, int64_t dim, bool largest, bool sorted);

TensorView* argsort(TensorView* in, int64_t dim, bool descending, bool stable);

}  // namespace nvfuse
