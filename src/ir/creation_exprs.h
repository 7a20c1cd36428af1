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
  // uniform(0, 1) in Float, Half or BFloat16: drawn as unit floats, its
  // value is the unit float itself.
  bool is_unit_uniform() const;
  // Whether input `i` is a constant parameter (a bound, an explicit seed
  // or offset) that kernels take as an argument rather than in their code:
  // definitions that differ only in those values (a loop over uniform(lo,
  // hi) or over seeds) then share one compiled kernel. uniform(0, 1) keeps
  // its bounds in the code, where they vanish.
  bool passes_by_value(size_t i) const;
};

// Whether `expr`'s input `i` is a constant that kernels take by value
// (RngOp::passes_by_value); false for every other op's constants, which
// kernels fold into their code.
bool constant_passed_by_value(const Expr& expr, size_t i);

}  // namespace nvfuse
