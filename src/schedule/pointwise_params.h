// The pointwise scheduler's heuristics: from the concrete sizes, strides and
// addresses of one call, the iteration space the kernel walks and the plain
// data (PointwiseParams) that the code generator consumes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schedule/pointwise_analysis.h"
#include "schedule/tensor_arg.h"
#include "schedule/transpose_params.h"

namespace nvfuse {

// How a tensor is read or written along the innermost iteration axis.
enum class InnerAccess {
  kContiguous,  // stride 1: vector loads/stores
  kBroadcast,   // stride 0: one load serves the whole vector
  kStrided,     // anything else: element by element (vector width 1)
};

// The access pattern of a tensor whose stride along the axis is `stride`.
InnerAccess inner_access_of(int64_t stride);

// What changes the generated code. Sizes and strides are not here: they are
// kernel arguments, so one kernel serves every size with the same pattern.
struct PointwiseParams {
  int collapsed_rank = 1;  // iteration axes after merging
  int vector_width = 1;    // elements per vector access
  int unroll = 1;          // vector groups per thread, loaded together
  int block_size = 128;
  bool index_32bit = true;
  // One per kernel tensor: the analysis's inputs, then its outputs.
  std::vector<InnerAccess> inner_access;
  // Enabled: the tiled kernel (transpose_params.h); vector_width is then
  // its vector along each phase's contiguous axis, unroll 1 and block_size
  // kTransposeThreads.
  TransposeTiling transpose;

  std::string to_string() const;
  bool operator==(const PointwiseParams& other) const;
};

// The iteration space of one call, after merging axes.
struct IterationSpace {
  std::vector<int64_t> extents;               // outermost first
  std::vector<std::vector<int64_t>> strides;  // per kernel tensor, per axis
  int64_t numel = 1;
};

// The launch-shape choices the heuristics start from, chosen by sweeps on an
// H100 (tools/tune_pointwise.py): 256-thread blocks, and about 16 elements
// per thread (unroll = elements_per_thread / vector width, at most
// max_unroll): bf16 peaked at 2 x 8, fp32 at 4 x 4. Exposed so that tuning
// runs can sweep them (nvfuse._C.set_pointwise_tuning).
struct PointwiseTuning {
  int block_size = 256;
  int max_unroll = 4;
  int elements_per_thread = 16;
  int transpose_tile = 0;    // 0: the default (choose_transpose_tiling)
  int transpose_vector = 0;  // 0: by element size (transpose_vector_width)
  // Elements a thread holds times the fusion's heavy math ops per element
  // (PointwiseAnalysis::heavy_math_ops) stay within this, down to one
  // vector a thread: NVRTC's time grows faster than the code each inlined
  // routine adds (0: no budget). 64 keeps 16 elements for up to four such
  // ops (the benchmarks' chain of sin, exp, tanh and sigmoid); on 2 cores,
  // 20 steps of that chain compiled in 2.6 s (fp32) and 4.9 s (bf16) at
  // 16 elements, 0.9 s and 1.4 s at the budget's 4.
  int heavy_math_budget = 64;
};

struct PointwiseSchedule {
  IterationSpace space;
  PointwiseParams params;
  int64_t grid_size = 0;  // blocks; 0 when there is nothing to do
};

// `inputs` and `outputs` follow the analysis's order. Outputs are laid out
// already (allocated by their allocation domains).
PointwiseSchedule schedule_pointwise(const PointwiseAnalysis& analysis,
    const std::vector<TensorArg>& inputs, const std::vector<TensorArg>& outputs,
    const DeviceInfo& device, const PointwiseTuning& tuning = {});

}  // namespace nvfuse
