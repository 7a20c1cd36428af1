// Expr kinds that create tensors from scalars: full, iota, and the random
// distributions (Philox counter-based, so a (seed, offset) pair fixes every
// value on any device).
#pragma once

#include "ir/exprs.h"

namespace nvfuse {

// inputs: the fill value, then one Scalar per output axis.
class FullOp : public Expr {
 public:
  NVFUSE_EXPR_BOILERPLATE(FullOp)
};

// A 1-D tensor start, start + step, ...; inputs: length, start, step.
class IotaOp : public Expr {
 public:
  NVFUSE_EXPR_BOILERPLATE(IotaOp)
};

// uniform(low, high) or normal(mean, std) values; inputs: the two
// parameters, then (seed, offset) when given explicitly, then one Scalar per
// output axis. Without an explicit seed each run draws (seed, offset) from
// torch's generator of the output's device.
class RngOp : public Expr {
 public:
  NVFUSE_EXPR_BOILERPLATE(RngOp)
  bool is_normal() const { return attribute<bool>(0); }
  bool has_explicit_seed() const { return attribute<bool>(1); }
  size_t first_size_input() const { return has_explicit_seed() ? 4 : 2; }
};

}  // namespace nvfuse
