// Small builders shared by the C++ tests.
#pragma once

#include "ir/device_mesh.h"
#include "ir/fusion.h"
#include "ops/pointwise.h"
#include "ops/reduction.h"

namespace nvfuse::testing {

// A fusion input of `rank` symbolic (-1) axes.
inline TensorView* symbolic_input(Fusion& f, int64_t rank, DataType dtype) {
  std::vector<IterDomain*> axes;
  for (int64_t i = 0; i < rank; ++i) {
    axes.push_back(f.create<IterDomain>(
        f.create<Scalar>(DataType::Index, std::nullopt), IterType::kIteration));
  }
  auto* tv = f.create<TensorView>(TensorDomain(axes), dtype);
  f.add_input(tv);
  return tv;
}

// A fusion input of constant extents `sizes`.
inline TensorView* concrete_input(Fusion& f, const std::vector<int64_t>& sizes, DataType dtype) {
  std::vector<IterDomain*> axes;
  for (int64_t size : sizes) {
    axes.push_back(f.create<IterDomain>(f.index_constant(size), IterType::kIteration));
  }
  auto* tv = f.create<TensorView>(TensorDomain(axes), dtype);
  f.add_input(tv);
  return tv;
}

// Row sums and column sums of the squares of a 4x8 input, as the fusion's
// two outputs: one inner-outer reduction kernel walks both.
inline void add_row_and_column_sums_of_squares(Fusion& f) {
  TensorView* a = concrete_input(f, {4, 8}, DataType::Float);
  TensorView* sq = pointwise(OpType::mul, {a, a})->as<TensorView>();
  f.add_output(reduce(OpType::add, sq, {1}, false, DataType::Null));
  f.add_output(reduce(OpType::add, sq, {0}, false, DataType::Null));
}

// The 1-D mesh of devices 0 .. devices - 1.
inline DeviceMesh mesh_of(int64_t devices) {
  std::vector<int64_t> ids;
  for (int64_t d = 0; d < devices; ++d) {
    ids.push_back(d);
  }
  return DeviceMesh(ids);
}

}  // namespace nvfuse::testing
