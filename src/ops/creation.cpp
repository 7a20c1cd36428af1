#include "ops/creation.h"

#include "ir/creation_exprs.h"
#include "ir/fusion.h"
#include "ops/new_axes.h"
#include "ops/pointwise.h"

namespace nvfuse {

namespace {

std::vector<IterDomain*> axes_of_shape(
    Fusion* fusion, const std::vector<Scalar*>& shape, const char* op) {
  std::vector<IterDomain*> axes;
  for (size_t i = 0; i < shape.size(); ++i) {
    NVFUSE_TYPE_CHECK(is_integral(shape[i]->dtype()), op, ": shape[", i,
        "] must be an integer, got ", shape[i]->dtype());
    if (auto size = shape[i]->constant_int()) {
      NVFUSE_CHECK(*size >= 0, op, ": shape[", i, "] is ", *size, "; sizes must be >= 0");
    }
    axes.push_back(axis_of_extent(fusion, shape[i]));
  }
  return axes;
}

Scalar* as_type(Scalar* value, DataType dtype) {
  return value->dtype() == dtype ? value : cast(value, dtype)->as<Scalar>();
}

TensorView* random(bool is_normal, Scalar* a, Scalar* b, const std::vector<Scalar*>& shape,
    RngSeed seed, DataType dtype, const char* op) {
  NVFUSE_TYPE_CHECK(
      is_floating(dtype) && dtype != DataType::Float8_e4m3fn && dtype != DataType::Float8_e5m2, op,
      ": dtype must be Double, Float, Half or BFloat16, got ", dtype);
  NVFUSE_CHECK((seed.seed == nullptr) == (seed.offset == nullptr), op,
      ": give both rng_seed and rng_offset, or neither");
  Fusion* fusion = a->fusion();
  std::vector<Val*> inputs = {as_type(a, DataType::Double), as_type(b, DataType::Double)};
  if (seed.seed != nullptr) {
    NVFUSE_TYPE_CHECK(is_integral(seed.seed->dtype()) && is_integral(seed.offset->dtype()), op,
        ": rng_seed and rng_offset must be integers");
    inputs.push_back(seed.seed);
    inputs.push_back(seed.offset);
  }
  inputs.insert(inputs.end(), shape.begin(), shape.end());
  auto* out = fusion->create<TensorView>(TensorDomain(axes_of_shape(fusion, shape, op)), dtype);
  fusion->create<RngOp>(ExprFields{
      std::move(inputs), {out}, {{"normal", is_normal}, {"explicit_seed", seed.seed != nullptr}}});
  return out;
}

// uniform [0, 1) or standard normal values with `like`'s shape and dtype.
TensorView* random_like(bool is_normal, TensorView* like, RngSeed seed, const char* op) {
  Fusion* fusion = like->fusion();
  return random(is_normal, fusion->constant(ScalarValue(0.0), DataType::Double),
      fusion->constant(ScalarValue(1.0), DataType::Double), shape_of(like), seed, like->dtype(),
      op);
}

}  // namespace

std::vector<Scalar*> shape_of(const TensorView* like) {
  std::vector<Scalar*> shape;
  for (const IterDomain* id : like->logical()) {
    shape.push_back(id->logical_extent());
  }
  return shape;
}

TensorView* full(const std::vector<Scalar*>& shape, Scalar* fill_value, DataType dtype) {
  NVFUSE_TYPE_CHECK(dtype != DataType::Null && dtype != DataType::Index, "full: dtype ", dtype,
      " is not a tensor element type");
  Fusion* fusion = fill_value->fusion();
  std::vector<Val*> inputs = {as_type(fill_value, dtype)};
  inputs.insert(inputs.end(), shape.begin(), shape.end());
  auto* out = fusion->create<TensorView>(TensorDomain(axes_of_shape(fusion, shape, "full")), dtype);
  fusion->create<FullOp>(ExprFields{std::move(inputs), {out}, {}});
  return out;
}

TensorView* iota(Scalar* length, Scalar* start, Scalar* step, DataType dtype) {
  NVFUSE_TYPE_CHECK(
      is_integral(length->dtype()), "iota: length must be an integer, got ", length->dtype());
  NVFUSE_TYPE_CHECK((is_integral(dtype) && dtype != DataType::Index) || is_floating(dtype),
      "iota: dtype must be an integer or floating-point type, got ", dtype);
  Fusion* fusion = length->fusion();
  if (start == nullptr) {
    start = fusion->constant(ScalarValue(int64_t{0}), dtype);
  }
  if (step == nullptr) {
    step = fusion->constant(ScalarValue(int64_t{1}), dtype);
  }
  auto* out =
      fusion->create<TensorView>(TensorDomain(axes_of_shape(fusion, {length}, "iota")), dtype);
  fusion->create<IotaOp>(
      ExprFields{{length, as_type(start, dtype), as_type(step, dtype)}, {out}, {}});
  return out;
}

TensorView* uniform(
    Scalar* low, Scalar* high, const std::vector<Scalar*>& shape, RngSeed seed, DataType dtype) {
  return random(false, low, high, shape, seed, dtype, "uniform");
}

TensorView* normal(
    Scalar* mean, Scalar* std, const std::vector<Scalar*>& shape, RngSeed seed, DataType dtype) {
  return random(true, mean, std, shape, seed, dtype, "normal");
}

TensorView* rand_like(TensorView* like, RngSeed seed) {
  return random_like(false, like, seed, "rand_like");
}

TensorView* randn_like(TensorView* like, RngSeed seed) {
  return random_like(true, like, seed, "randn_like");
}

}  // namespace nvfuse
