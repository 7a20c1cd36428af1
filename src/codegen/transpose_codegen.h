// (fusion, PointwiseParams with a TransposeTiling) -> CUDA C++: the tiled
// kernel for fusions whose tensors disagree on the innermost axis. Each
// block reads its transposed inputs a tile at a time along their contiguous
// axis into shared memory, computes along the innermost axis (reading the
// other inputs and writing the other outputs there, coalesced), and writes
// its transposed outputs back from shared memory along their axis.
#pragma once

#include "codegen/kernel_args.h"
#include "ir/fusion.h"
#include "schedule/pointwise_analysis.h"
#include "schedule/pointwise_params.h"

namespace nvfuse {

KernelSource generate_transpose_kernel(
    const Fusion& fusion, const PointwiseAnalysis& analysis, const PointwiseParams& params);

}  // namespace nvfuse
