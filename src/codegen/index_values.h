// Values that depend only on an element's position: iota and random ops.
// The coordinate kernel and the reduction kernels both compute them from
// the element's position in row-major order of the op's result (what the
// reference evaluator numbers it), so every kernel kind draws the same
// random tensor for the same (seed, offset).
#pragma once

#include <functional>
#include <string>

#include "codegen/kernel_args.h"
#include "ir/all_exprs.h"

namespace nvfuse {

// How a kernel reads a by-value input (`args.<name>`).
using ArgText = std::function<std::string(const Val*)>;

// The scalar `s` as a CUDA expression of type `dtype` (constants printed).
std::string scalar_text_as(const Val* s, DataType dtype, const ArgText& arg_text);
std::string int64_text(const Val* s, const ArgText& arg_text);

// Element `index` (a CUDA integer expression) of iota's result.
std::string iota_value(const IotaOp& expr, const std::string& index, const ArgText& arg_text);

// A random op's Philox key and counter offset, as CUDA expressions.
struct PhiloxKey {
  std::string seed;
  std::string offset;
};

// Kernels pass each random op that draws its (seed, offset) from torch's
// generator at launch as two Int values `seed_<k>`, `offset_<k>` (k: its
// place in `drawn`), after their `first_value` other by-value inputs. A
// kernel for launches recorded into a CUDA graph (`graph_rng`) also takes
// the generator's graph-safe state, device pointers `graph_rng_seed` and
// `graph_rng_offset` that each replay sets (nvfuse_philox::drawn_seed), and
// offset_<k> is the op's offset within the graph. Only those kernels read
// it: computed keys cost registers that by-value ones, operands from the
// parameter bank, do not (the bf16 attention prologue's kernel, held to 72
// registers, spilled 40 bytes).
void add_drawn_seed_args(KernelArgLayout& layout, size_t first_value, size_t drawn, bool graph_rng);
PhiloxKey drawn_philox_key(
    const std::vector<const RngOp*>& drawn, const RngOp& rng, bool graph_rng);

// The explicit (seed, offset) inputs of `expr`, or `drawn` for one that
// draws them from torch's generator at launch.
PhiloxKey philox_key_of(const RngOp& expr, const ArgText& arg_text, const PhiloxKey& drawn);

// Float uniforms come from unit floats that groups of four consecutive
// elements share one Philox block for (nvfuse_philox::unit_floats); every
// other kind computes each element from its index alone.
bool uses_unit_floats(const RngOp& expr);
// A uniform(0, 1) drawn as unit floats: its value is the unit float itself.
bool is_unit_uniform(const RngOp& expr);

// Element `index` of the random op's result; `unit` is that element's unit
// float where uses_unit_floats(expr), else ignored.
std::string random_value(const RngOp& expr, const std::string& index, const PhiloxKey& key,
    const std::string& unit, const ArgText& arg_text);

}  // namespace nvfuse
