#pragma once

#include <string>

namespace nvfuse {

// The device runtime (device_runtime.cuh), embedded at build time; every
// generated kernel starts with it.
const std::string& device_runtime_source();
// Warp, block and column reductions and Welford merging
// (device_reduction.cuh); reduction kernels add it after the runtime.
const std::string& device_reduction_source();
// Philox4x32-10 and nvfuse's random-value mapping (philox.cuh); kernels
// with random ops add it after the runtime.
const std::string& device_philox_source();

}  // namespace nvfuse
