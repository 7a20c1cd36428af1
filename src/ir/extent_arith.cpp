#include "ir/extent_arith.h"

#include <algorithm>

#include "ir/fusion.h"

namespace nvfuse {

namespace {

Scalar* fold_or_build(OpType op, Scalar* a, Scalar* b, int64_t (*fold)(int64_t, int64_t)) {
  Fusion* fusion = a->fusion();
  if (a->constant_int() && b->constant_int()) {
    return fusion->index_constant(fold(*a->constant_int(), *b->constant_int()));
  }
  auto* out = fusion->create<Scalar>(DataType::Index, std::nullopt);
  PointwiseOp::make(out, op, {a, b});
  return out;
}

}  // namespace

Scalar* extent_add(Scalar* a, Scalar* b) {
  if (a->is_constant_int(0)) {
    return b;
  }
  if (b->is_constant_int(0)) {
    return a;
  }
  return fold_or_build(OpType::add, a, b, [](int64_t x, int64_t y) { return x + y; });
}

Scalar* extent_sub(Scalar* a, Scalar* b) {
  if (b->is_constant_int(0)) {
    return a;
  }
  return fold_or_build(OpType::sub, a, b, [](int64_t x, int64_t y) { return x - y; });
}

Scalar* extent_div(Scalar* a, Scalar* b) {
  if (b->is_constant_int(1)) {
    return a;
  }
  return fold_or_build(OpType::div, a, b, [](int64_t x, int64_t y) {
    NVFUSE_CHECK(y != 0, "division of a size by zero");
    return x / y;
  });
}

Scalar* extent_max(Scalar* a, Scalar* b) {
  return fold_or_build(OpType::maximum, a, b, [](int64_t x, int64_t y) { return std::max(x, y); });
}

Scalar* extent_min(Scalar* a, Scalar* b) {
  return fold_or_build(OpType::minimum, a, b, [](int64_t x, int64_t y) { return std::min(x, y); });
}

Scalar* normalized_index(Scalar* index, Scalar* extent) {
  Fusion* fusion = index->fusion();
  Scalar* zero = fusion->index_constant(0);
  Scalar* from_end = extent_max(extent_add(index, extent), zero);
  Scalar* from_start = extent_min(index, extent);
  if (auto value = index->constant_int()) {
    return *value < 0 ? from_end : from_start;
  }
  // where(index < 0, from_end, from_start), built as scalar exprs.
  auto* negative = fusion->create<Scalar>(DataType::Bool, std::nullopt);
  PointwiseOp::make(negative, OpType::lt, {index, zero});
  auto* out = fusion->create<Scalar>(DataType::Index, std::nullopt);
  PointwiseOp::make(out, OpType::where, {negative, from_end, from_start});
  return out;
}

Scalar* extent_mul(Scalar* a, Scalar* b) {
  if (a->is_constant_int(1)) {
    return b;
  }
  if (b->is_constant_int(1)) {
    return a;
  }
  return fold_or_build(OpType::mul, a, b, [](int64_t x, int64_t y) { return x * y; });
}

Scalar* extent_ceil_div(Scalar* a, Scalar* b) {
  if (b->is_constant_int(1)) {
    return a;
  }
  return fold_or_build(OpType::ceil_div, a, b, [](int64_t x, int64_t y) {
    NVFUSE_CHECK(y > 0, "split factor must be positive, got ", y);
    return (x + y - 1) / y;
  });
}

}  // namespace nvfuse
