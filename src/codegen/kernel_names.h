// The names generated kernels carry in nsys, ncu and torch.profiler
// traces: nvfuse_<kind>_<tactic>, e.g. nvfuse_reduction_inner_persistent
// or nvfuse_pointwise_vec8. A name is derived from the kernel's parameters
// alone, never from the fusion it serves, so identical kernels of two
// fusions stay one NVRTC compile and one disk-cache entry; the NVTX range
// around each launch names the fusion and segment.
#pragma once

#include <string>

#include "schedule/coordinate_params.h"
#include "schedule/pointwise_params.h"
#include "schedule/reduction_params.h"

namespace nvfuse {

std::string pointwise_kernel_name(const PointwiseParams& params);
std::string reduction_kernel_name(const ReductionParams& params);
// The second kernel of a two-kernel reduction (inner_outer's column finish).
std::string reduction_finish_kernel_name(const ReductionParams& params);
std::string coordinate_kernel_name(const CoordinateParams& params);
std::string scan_kernel_name(const CoordinateParams& params);

}  // namespace nvfuse
