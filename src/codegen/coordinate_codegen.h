// (fusion, CoordinateParams) -> CUDA C++: one thread per output element
// (`unroll` of them a block apart); each element's coordinates are computed
// from its linear index and every output's value is built back from the
// inputs by CoordinateValues.
#pragma once

#include "codegen/kernel_args.h"
#include "ir/fusion.h"
#include "schedule/coordinate_analysis.h"
#include "schedule/coordinate_params.h"

namespace nvfuse {

KernelSource generate_coordinate_kernel(
    const Fusion& fusion,
    const CoordinateAnalysis& analysis,
    const CoordinateParams& params);

}  // namespace nvfuse
