// The scan kernel: a reduction-free fusion with cumsums (prefix sums) along
// one axis of its iteration space, computed with the elementwise work
// before and after them in one kernel (a cumsum alone ran through ATen,
// and the work around it as kernels of their own).
//
// - Along the innermost axis, a warp walks each row in chunks of 32 x kVec
//   elements: each lane sums its kVec elements, a warp scan (shuffles)
//   gives each lane the sum before it, and the chunk's total carries to the
//   next chunk. Lanes past the row's end read zeros and store nothing.
// - Along another axis, each thread takes kVec neighbouring elements of
//   the innermost axis (coalesced across the warp) and walks the scan axis
//   with a running sum per lane.
//
// Sums accumulate in fp32 for half and bf16 values (in their own type
// otherwise) and round once. torch's CUDA cumsum adds half values in half,
// so nvfuse's are the closer to exact (2x4096 fp16 values on an H100: max
// error 0.50 against torch's 2.87); tests compare with torch's cumsum of
// the values in fp32. The order of the additions differs from a
// sequential sum, so float results match torch to rounding. Lanes past a
// row's end compute the elementwise work on zeros (an integer division
// by zero there is harmless: its result is never stored or summed in).
#pragma once

#include "codegen/coordinate_values.h"
#include "codegen/kernel_args.h"
#include "schedule/coordinate_analysis.h"
#include "schedule/coordinate_params.h"

namespace nvfuse {

// The body's statements (what lane_requirements inspects).
CoordinateValues scan_values(
    const Fusion& fusion, const CoordinateAnalysis& analysis, const CoordinateParams& params);

KernelSource generate_scan_kernel(
    const Fusion& fusion, const CoordinateAnalysis& analysis, const CoordinateParams& params);

}  // namespace nvfuse
