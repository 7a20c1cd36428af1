// (fusion, PointwiseParams) -> CUDA C++: the pointwise kernel skeleton with
// the fused expression body inlined.
#pragma once

#include <string>

#include "codegen/kernel_args.h"
#include "ir/fusion.h"
#include "schedule/pointwise_analysis.h"
#include "schedule/pointwise_params.h"

namespace nvfuse {

KernelSource generate_pointwise_kernel(
    const Fusion& fusion, const PointwiseAnalysis& analysis, const PointwiseParams& params);

}  // namespace nvfuse
