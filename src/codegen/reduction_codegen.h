// (fusion, ReductionParams) -> CUDA C++: the inner (row per lanes, phases
// over a persistent or chunked row) and outer (columns per thread, walking
// down the rows) reduction kernels, with the fusion's exprs inlined as one
// statement each.
#pragma once

#include "codegen/kernel_args.h"
#include "schedule/reduction_analysis.h"
#include "schedule/reduction_params.h"

namespace nvfuse {

// Inner-outer kernels come with a second kernel, nvfuse_reduction_finish,
// over the same Args: kFinishColumns columns per block of kFinishThreads
// threads, one block per column group; each thread loads kFinishBatch
// partial rows before it adds them.
constexpr int kFinishColumns = 32;
constexpr int kFinishThreads = 512;
constexpr int kFinishBatch = 4;

KernelSource generate_reduction_kernel(
    const ReductionAnalysis& analysis,
    const ReductionParams& params);

}  // namespace nvfuse
