// Axes of the tensors that shape, indexing and matmul ops create: copies of
// an operand's axes (same extents, so sizes stay linked to where they came
// from) and axes of a computed extent.
#pragma once

#include <vector>

#include "ir/fusion.h"

namespace nvfuse {

inline IterDomain* copy_axis(Fusion* fusion, const IterDomain* id) {
  return fusion->create<IterDomain>(
      id->extent(), id->iter_type(), id->expanded_extent());
}

inline std::vector<IterDomain*> copy_axes(const TensorView* tv) {
  std::vector<IterDomain*> axes;
  for (const IterDomain* id : tv->logical()) {
    axes.push_back(copy_axis(tv->fusion(), id));
  }
  return axes;
}

// A broadcast axis when `extent` is the constant 1, else an iteration axis.
inline IterDomain* axis_of_extent(Fusion* fusion, Scalar* extent) {
  if (extent->is_constant_int(1)) {
    return fusion->create<IterDomain>(fusion->one(), IterType::kBroadcast);
  }
  return fusion->create<IterDomain>(extent, IterType::kIteration);
}

inline TensorView* tensor_of_axes(
    Fusion* fusion,
    std::vector<IterDomain*> axes,
    DataType dtype) {
  return fusion->create<TensorView>(TensorDomain(std::move(axes)), dtype);
}

}  // namespace nvfuse
