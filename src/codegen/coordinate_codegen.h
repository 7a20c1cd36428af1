// (fusion, CoordinateParams) -> CUDA C++: each thread handles `unroll`
// groups of kVec lanes (a block apart); a group's coordinates are computed
// from its index and every output's value is built back from the inputs by
// CoordinateValues.
#pragma once

#include "codegen/kernel_args.h"
#include "ir/fusion.h"
#include "schedule/coordinate_analysis.h"
#include "schedule/coordinate_params.h"

namespace nvfuse {

// What vectorizing the kernel needs: the scalars (boundaries along the
// lane axis that pads and cats test) whose values must be multiples of
// the vector width, or shareable false when lanes cannot share predicates.
struct LaneRequirements {
  std::vector<const Val*> multiples;
  bool shareable = true;
};
LaneRequirements lane_requirements(
    const Fusion& fusion,
    const CoordinateAnalysis& analysis);

KernelSource generate_coordinate_kernel(
    const Fusion& fusion,
    const CoordinateAnalysis& analysis,
    const CoordinateParams& params);

}  // namespace nvfuse
