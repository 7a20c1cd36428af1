// How a reduction's tensors are walked as a 2-D problem (rows x reduced
// width), before any launch choice: every tensor's strides along the
// reference axes, the main tensor that sets the walking order, and the
// merged row and column axes (ReductionSpace). The tactics
// (outer_columns.cpp, the inner-row choices) start from it.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "schedule/reduction_analysis.h"
#include "schedule/reduction_params.h"
#include "schedule/tensor_arg.h"

namespace nvfuse {

struct ReductionWalk {
  // The kernel's tensors: inputs, then outputs.
  std::vector<TensorArg> tensors;
  size_t input_count = 0;
  // Per kernel tensor: read or written per element (not per row, and not a
  // column output, which the finishing kernel writes).
  std::vector<bool> per_element;
  // The tensor that sets the walking order (-1: none varies along the
  // reduced axes; the order is the reference's).
  int main_tensor = -1;
  // The schedule the tactics fill in, its space already set.
  ReductionSchedule schedule;
};

// nullopt when the reduced axes cannot be walked as one strided axis in
// every tensor. See schedule_reduction for the arguments.
std::optional<ReductionWalk> walk_reduction(const ReductionAnalysis& analysis,
    const std::vector<int64_t>& reference_sizes, const std::vector<TensorArg>& inputs,
    const std::vector<TensorArg>& outputs, const std::vector<TensorArg>& positions);

// The widest vector every tensor in `vectorized` takes: 16 bytes of the
// widest contiguous tensor in `drives` (the traffic that matters: a bf16
// input read per element outweighs a float result written per row, which
// then takes two 16-byte stores), stepped down until extents, addresses and
// the other strides are multiples of it.
int vector_width_for(const std::vector<TensorArg>& tensors, const std::vector<bool>& vectorized,
    const std::vector<bool>& drives, const std::vector<InnerAccess>& access, int64_t extent,
    const std::vector<std::vector<int64_t>>& other_strides);

}  // namespace nvfuse
