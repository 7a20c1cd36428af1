// The reference semantics of every pointwise op, in ATen. This is the oracle
// generated kernels are tested against, so each op says exactly what torch
// computes.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <vector>

#include "ir/op_table.h"
#include "ir/scalar_value.h"

namespace nvfuse {

// A tensor, or a scalar also held as a 0-d "wrapped number" tensor of the
// compute type (torch's treatment of Python scalars).
struct AtenOperand {
  at::Tensor tensor;
  std::optional<ScalarValue> scalar;
};

// `op` applied to operands already in its compute type `compute`. Returns the
// result in whatever type ATen produces; the caller casts it.
at::Tensor apply_pointwise(
    OpType op, const std::vector<AtenOperand>& operands, at::ScalarType compute);

}  // namespace nvfuse
