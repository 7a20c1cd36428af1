// Tensor factories: full, iota and the random distributions uniform,
// normal, rand_like and randn_like.
#pragma once

#include <vector>

#include "ir/scalar.h"
#include "ir/tensor_view.h"

namespace nvfuse {

// The logical extents of `tv` (expanded sizes where it is expanded): the
// shape a factory "like" it takes, and what fd.ops.shape returns.
std::vector<Scalar*> shape_of(const TensorView* tv);

TensorView* full(const std::vector<Scalar*>& shape, Scalar* fill_value, DataType dtype);
// start, start + step, ... (length values); start/step default to 0/1.
TensorView* iota(Scalar* length, Scalar* start, Scalar* step, DataType dtype);

// Explicit (seed, offset) make the values a pure function of them; without
// them each run takes a fresh pair from torch's generator.
struct RngSeed {
  Scalar* seed = nullptr;
  Scalar* offset = nullptr;
};
// Floating-point dtypes only; low <= values < high.
TensorView* uniform(
    Scalar* low, Scalar* high, const std::vector<Scalar*>& shape, RngSeed seed, DataType dtype);
TensorView* normal(
    Scalar* mean, Scalar* std, const std::vector<Scalar*>& shape, RngSeed seed, DataType dtype);
// Shape and dtype of `like`: uniform [0, 1) and standard normal.
TensorView* rand_like(TensorView* like, RngSeed seed);
TensorView* randn_like(TensorView* like, RngSeed seed);

}  // namespace nvfuse
