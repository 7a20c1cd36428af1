// Broadcast and expand: inserting size-1 axes and giving broadcast axes a
// logical size without copying (stride 0).
#pragma once

#include <vector>

#include "ir/scalar.h"
#include "ir/tensor_view.h"

namespace nvfuse {

// New size-1 axes where `is_broadcast_dim` is true; the false entries take
// the input's axes in order.
TensorView* broadcast(TensorView* in, const std::vector<bool>& is_broadcast_dim);

// Broadcast axes grow to `shape[i]`; an entry of -1 (a constant) keeps the
// axis; a non-broadcast axis must keep its size.
TensorView* expand(TensorView* in, const std::vector<Scalar*>& shape);

// Input axis i becomes output axis broadcast_dims[i] (strictly increasing);
// the other output axes are new broadcasts, expanded to `shape`.
TensorView* broadcast_in_dim(
    TensorView* in, const std::vector<Scalar*>& shape, const std::vector<int64_t>& broadcast_dims);

}  // namespace nvfuse
