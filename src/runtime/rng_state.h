// The (seed, offset) pair of one random op in one run, taken from torch's
// default generator of the device, so torch.manual_seed makes nvfuse's
// random ops reproducible and successive runs differ.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <vector>

#include "ir/scalar_value.h"
#include "runtime/kernel_launch.h"

namespace nvfuse {

struct PhiloxState {
  uint64_t seed = 0;
  uint64_t offset = 0;
};

// CUDA: the generator's seed and current offset, which is then advanced by
// 4 (torch's unit). CPU: a seed drawn from the CPU generator, offset 0. By
// value: refused during a CUDA graph capture (the reference path's random
// ops, which use it, would replay the same values).
PhiloxState next_philox_state(c10::Device device);

// Appends (seed, offset) for each of `drawn` random ops to values.values,
// as the kernels' seed_<k>/offset_<k> arguments (codegen/index_values.h)
// expect them. In a launch that a CUDA graph capture records, the seed and
// offset cannot be values (every replay would draw the same numbers):
// torch's generator then gives its graph-safe state, device pointers to a
// seed and an offset that each replay of the graph sets, and per op an
// offset within the graph (values.graph_rng, offset_<k>), as torch's own
// random kernels take it (at::PhiloxCudaState).
void append_drawn_seeds(LaunchValues& values, size_t drawn, c10::Device device);

// Whether a launch of a kernel with `drawn` random ops on torch's current
// stream of `device` is recorded into a CUDA graph: its kernel must then
// read the graph-safe state (the params' graph_rng). False without random
// ops, without asking the driver.
bool draws_in_graph(size_t drawn, c10::Device device);
// The kernel chosen by draws_in_graph reads what append_drawn_seeds gave.
void check_drawn_in_graph(const LaunchValues& values, bool kernel_reads_graph_state);

}  // namespace nvfuse
