// Axes of the tensors that op constructors create: copies of an operand's
// axes (same extents, so sizes stay linked to where they came from), axes
// of a computed extent, and the check that two sizes agree.
#pragma once

#include <string>
#include <vector>

#include "ir/fusion.h"

namespace nvfuse {

inline IterDomain* copy_axis(Fusion* fusion, const IterDomain* id) {
  return fusion->create<IterDomain>(id->extent(), id->iter_type(), id->expanded_extent());
}

// A fresh tensor with copies of `axes` (sharing extents), contiguous
// allocation, and `dtype`.
inline TensorView* new_tensor_like_axes(
    Fusion* fusion, const std::vector<IterDomain*>& axes, DataType dtype) {
  std::vector<IterDomain*> copies;
  copies.reserve(axes.size());
  for (const IterDomain* id : axes) {
    copies.push_back(copy_axis(fusion, id));
  }
  return fusion->create<TensorView>(TensorDomain(std::move(copies)), dtype);
}

// A broadcast axis when `extent` is the constant 1, else an iteration axis.
inline IterDomain* axis_of_extent(Fusion* fusion, Scalar* extent) {
  if (extent->is_constant_int(1)) {
    return fusion->create<IterDomain>(fusion->one(), IterType::kBroadcast);
  }
  return fusion->create<IterDomain>(extent, IterType::kIteration);
}

inline TensorView* tensor_of_axes(Fusion* fusion, std::vector<IterDomain*> axes, DataType dtype) {
  return fusion->create<TensorView>(TensorDomain(std::move(axes)), dtype);
}

// Requires sizes `a` and `b` to be equal: a definition error now when both
// are constants (naming `op` and `what` differ), else a run-time equality
// recorded against `result`.
inline void require_same_extent(
    Scalar* a, Scalar* b, Val* result, const char* op, const std::string& what) {
  if (a == b) {
    return;
  }
  const auto x = a->constant_int();
  const auto y = b->constant_int();
  if (x && y) {
    NVFUSE_CHECK(*x == *y, op, ": ", what, " (", a->to_string(), " vs ", b->to_string(), ")");
    return;
  }
  result->fusion()->add_extent_equality(a, b, result);
}

}  // namespace nvfuse
