// Indexing ops: select, index_select, gather, take_along_axis, scatter,
// index_put_accumulate, embedding_fwd, and the position-dependent triu and
// cumsum, with torch's semantics. Index tensors are Int or Int32.
#pragma once

#include <vector>

#include "ir/scalar.h"
#include "ir/tensor_view.h"

namespace nvfuse {

TensorView* select(TensorView* in, Scalar* index, int64_t dim);
TensorView* index_select(TensorView* in, TensorView* index, int64_t dim);
// torch.gather: index has in's rank and no larger extents off `dim`.
TensorView* gather(TensorView* in, TensorView* index, int64_t dim);
// torch.take_along_dim: index and in broadcast against each other off `dim`.
TensorView* take_along_axis(TensorView* in, TensorView* index, int64_t dim);
TensorView* scatter(TensorView* in, TensorView* index, TensorView* src, int64_t dim);
// acc[index[i]] += value[i] along axis 0; index is 1-D.
TensorView* index_put_accumulate(TensorView* acc, TensorView* index, TensorView* value);
// weight[indices] for a 2-D weight: indices' shape + [embedding_dim].
TensorView* embedding_fwd(TensorView* indices, TensorView* weight);
TensorView* triu(TensorView* in, Scalar* diagonal);
// Integer and Bool inputs sum in Int, as torch.cumsum.
TensorView* cumsum(TensorView* in, int64_t dim);

}  // namespace nvfuse
