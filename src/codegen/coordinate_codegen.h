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
// What lets it drop the per-access alignment checks
// (CoordinateParams::vectors_aligned): the kernel tensors (indices into
// inputs then outputs) accessed as vectors, and the scalars their lane
// coordinates are shifted by beyond `multiples`.
// Whether the kernel may run with flat lanes (CoordinateParams::
// flat_lanes): nothing in it needs the lanes on one row (a cat, a reshape,
// a scatter or a scan).
struct LaneRequirements {
  std::vector<const Val*> multiples;
  bool shareable = true;
  bool flat = false;
  // (index among the kernel's tensors, axis its lanes run along)
  std::vector<std::pair<size_t, int64_t>> vector_accesses;
  std::vector<const Val*> alignment_terms;
};
LaneRequirements lane_requirements(const Fusion& fusion, const CoordinateAnalysis& analysis);

class CoordinateValues;
// What `values` (a kernel body's statements) needs of its lanes.
LaneRequirements lanes_of(const CoordinateValues& values, const CoordinateAnalysis& analysis);

// What every coordinate-family kernel starts with: the device runtime
// (and Philox when it draws), a header naming `scheduler` and the params,
// Index, kVec and the Args struct of `layout`.
std::string coordinate_kernel_prelude(const CoordinateAnalysis& analysis,
    const CoordinateParams& params, const KernelArgLayout& layout, const std::string& scheduler);

// The kernel's arguments: `tensors` (inputs then outputs) as pointers, the
// by-value inputs, drawn seeds, numel, the iteration extents, the fast
// dividers when `dividers`, and the tensors' strides.
KernelArgLayout coordinate_arg_layout(const CoordinateAnalysis& analysis,
    const CoordinateParams& params, const std::vector<const TensorView*>& tensors, bool dividers);

KernelSource generate_coordinate_kernel(
    const Fusion& fusion, const CoordinateAnalysis& analysis, const CoordinateParams& params);

}  // namespace nvfuse
