// The (seed, offset) pair of one random op in one run, taken from torch's
// default generator of the device, so torch.manual_seed makes nvfuse's
// random ops reproducible and successive runs differ.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <vector>

#include "ir/scalar_value.h"

namespace nvfuse {

struct PhiloxState {
  uint64_t seed = 0;
  uint64_t offset = 0;
};

// CUDA: the generator's seed and current offset, which is then advanced by
// 4 (torch's unit). CPU: a seed drawn from the CPU generator, offset 0.
PhiloxState next_philox_state(c10::Device device);

// Appends (seed, offset) for each of `drawn` random ops, as the kernels'
// seed_<k>/offset_<k> arguments (codegen/index_values.h) expect them.
void append_drawn_seeds(std::vector<ScalarValue>& values, size_t drawn, c10::Device device);

}  // namespace nvfuse
