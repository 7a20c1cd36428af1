// The (seed, offset) pair of one random op in one run, taken from torch's
// default generator of the device, so torch.manual_seed makes nvfuse's
// random ops reproducible and successive runs differ.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>

namespace nvfuse {

struct PhiloxState {
  uint64_t seed = 0;
  uint64_t offset = 0;
};

// CUDA: the generator's seed and current offset, which is then advanced by
// 4 (torch's unit). CPU: a seed drawn from the CPU generator, offset 0.
PhiloxState next_philox_state(c10::Device device);

}  // namespace nvfuse
