// Shape ops: reshape, permute, squeeze, slice, pad and cat, with torch's
// semantics and errors that name the op and the offending argument.
#pragma once

#include <vector>

#include "ir/scalar.h"
#include "ir/tensor_view.h"

namespace nvfuse {

// `shape` may hold one constant -1 (the size that keeps the element count).
TensorView* reshape(TensorView* in, const std::vector<Scalar*>& shape);
// Output axis i is input axis dims[i] (negative dims count from the end).
TensorView* permute(TensorView* in, const std::vector<int64_t>& dims);
// Removes `dims`, which must be broadcast axes or have size 1.
TensorView* squeeze(TensorView* in, const std::vector<int64_t>& dims);
// One (start, end, step) per axis; step must be a positive integer.
TensorView* slice(TensorView* in, const std::vector<Scalar*>& starts,
    const std::vector<Scalar*>& ends, const std::vector<Scalar*>& steps);
// `widths` in torch.nn.functional.pad order: (before, after) of the last
// axis first; fewer pairs than axes leave the leading axes alone.
TensorView* pad(TensorView* in, const std::vector<Scalar*>& widths, Scalar* value);
// All inputs have one rank and dtype and equal extents except along dim.
TensorView* cat(const std::vector<TensorView*>& inputs, int64_t dim);

}  // namespace nvfuse
