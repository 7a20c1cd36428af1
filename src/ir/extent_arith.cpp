#include "ir/extent_arith.h"

#include "ir/fusion.h"

namespace nvfuse {

namespace {

Scalar* fold_or_build(
    OpType op,
    Scalar* a,
    Scalar* b,
    int64_t (*fold)(int64_t, int64_t)) {
  Fusion* fusion = a->fusion();
  if (a->constant_int() && b->constant_int()) {
    return fusion->index_constant(fold(*a->constant_int(), *b->constant_int()));
  }
  auto* out = fusion->create<Scalar>(DataType::Index, std::nullopt);
  PointwiseOp::make(out, op, {a, b});
  return out;
}

}  // namespace

Scalar* extent_mul(Scalar* a, Scalar* b) {
  if (a->is_constant_int(1)) {
    return b;
  }
  if (b->is_constant_int(1)) {
    return a;
  }
  return fold_or_build(
      OpType::mul, a, b, [](int64_t x, int64_t y) { return x * y; });
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
