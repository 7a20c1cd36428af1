#include "ops/reduction.h"

#include <algorithm>

#include "ir/axes.h"
#include "ir/extent_arith.h"
#include "ir/fusion.h"
#include "ops/broadcast.h"
#include "ops/new_axes.h"
#include "ops/pointwise.h"

namespace nvfuse {

namespace {

// The axes a reduction takes: all when none are named. Axis 0 or -1 of a
// 0-d tensor is the tensor itself, as torch has it: nothing to reduce
// (Thunder's softmax of a 0-d tensor reduces over axis 0).
std::vector<int64_t> reduction_axes(
    const TensorView* in, const std::vector<int64_t>& axes, const char* what) {
  const bool whole_0d = in->rank() == 0 &&
      std::all_of(axes.begin(), axes.end(), [](int64_t a) { return a == 0 || a == -1; });
  if (axes.empty() || whole_0d) {
    std::vector<int64_t> all(in->rank());
    for (int64_t i = 0; i < in->rank(); ++i) {
      all[i] = i;
    }
    return all;
  }
  return normalize_axes(axes, in->rank(), what);
}

// The input's axes without the reduced ones.
std::vector<IterDomain*> kept_axes(const TensorView* in, const std::vector<int64_t>& axes) {
  std::vector<IterDomain*> kept;
  for (int64_t i = 0; i < in->rank(); ++i) {
    if (!std::binary_search(axes.begin(), axes.end(), i)) {
      kept.push_back(in->logical()[i]);
    }
  }
  return kept;
}

// keepdim: the reduced axes come back as size-1 broadcasts.
TensorView* restore_reduced_axes(
    TensorView* out, int64_t in_rank, const std::vector<int64_t>& axes) {
  std::vector<bool> is_broadcast_dim(in_rank, false);
  for (int64_t axis : axes) {
    is_broadcast_dim[axis] = true;
  }
  return broadcast(out, is_broadcast_dim);
}

}  // namespace

TensorView* reduce(
    OpType op, TensorView* in, const std::vector<int64_t>& axes_in, bool keepdim, DataType dtype) {
  const char* what = reduction_name(op);
  NVFUSE_ASSERT(
      op == OpType::add || op == OpType::mul || op == OpType::maximum || op == OpType::minimum,
      "not a reduction op");
  const std::vector<int64_t> axes = reduction_axes(in, axes_in, what);
  if (dtype == DataType::Null && (op == OpType::add || op == OpType::mul) &&
      (is_integral(in->dtype()) || is_boolean(in->dtype()))) {
    dtype = DataType::Int;  // torch sums integers in int64
  }
  if (dtype != DataType::Null && dtype != in->dtype()) {
    in = cast(in, dtype)->as<TensorView>();
  }
  NVFUSE_TYPE_CHECK(!(is_complex(in->dtype()) && (op == OpType::maximum || op == OpType::minimum)),
      what, ": complex inputs are not ordered");
  Fusion* fusion = in->fusion();
  TensorView* out = new_tensor_like_axes(fusion, kept_axes(in, axes), in->dtype());
  ReductionOp::make(out, in, op, axes);
  return keepdim ? restore_reduced_axes(out, in->rank(), axes) : out;
}

std::pair<TensorView*, TensorView*> var_mean(
    TensorView* in, const std::vector<int64_t>& axes_in, int64_t correction, bool keepdim) {
  NVFUSE_TYPE_CHECK(is_floating(in->dtype()) || is_complex(in->dtype()),
      "var_mean: the input must be a floating-point or complex tensor, got ", in->dtype(),
      "; cast it first");
  NVFUSE_CHECK(correction >= 0, "var_mean: correction must be non-negative, got ", correction);
  const std::vector<int64_t> axes = reduction_axes(in, axes_in, "var_mean");
  Fusion* fusion = in->fusion();
  const std::vector<IterDomain*> kept = kept_axes(in, axes);
  TensorView* var = new_tensor_like_axes(fusion, kept, real_type_of(in->dtype()));
  TensorView* mean = new_tensor_like_axes(fusion, kept, in->dtype());
  VarMeanOp::make(var, mean, in, axes, correction);
  if (keepdim) {
    return {
        restore_reduced_axes(var, in->rank(), axes), restore_reduced_axes(mean, in->rank(), axes)};
  }
  return {var, mean};
}

namespace {

// The number of values reduced over `axes`, as a host scalar.
Scalar* reduced_count(TensorView* in, const std::vector<int64_t>& axes) {
  Scalar* count = in->fusion()->index_constant(1);
  for (int64_t axis : axes) {
    count = extent_mul(count, in->logical()[axis]->logical_extent());
  }
  return count;
}

}  // namespace

TensorView* mean(
    TensorView* in, const std::vector<int64_t>& axes_in, bool keepdim, DataType dtype) {
  const DataType result = dtype == DataType::Null ? in->dtype() : dtype;
  NVFUSE_TYPE_CHECK(is_floating(result) || is_complex(result),
      "mean: the input must be a floating-point or complex tensor (or dtype "
      "must name one), got ",
      result);
  const std::vector<int64_t> axes = reduction_axes(in, axes_in, "mean");
  // Half precision sums and divides in Float and rounds once, as torch's
  // mean kernel does (rounding the sum first is 1 ulp off in many rows).
  const DataType accumulate = is_reduced_float(result) ? DataType::Float : dtype;
  TensorView* sum = reduce(OpType::add, in, axes, keepdim, accumulate);
  return cast(pointwise(OpType::div, {sum, reduced_count(in, axes)}), result)->as<TensorView>();
}

WelfordResult welford(TensorView* in, const std::vector<int64_t>& axes_in) {
  const std::vector<int64_t> axes = reduction_axes(in, axes_in, "welford");
  auto [var, avg] = var_mean(in, axes, /*correction=*/0, /*keepdim=*/false);
  Scalar* count = reduced_count(in, axes);
  auto* var_sum = pointwise(OpType::mul, {var, count})->as<TensorView>();
  // n as a tensor of avg's shape: where() with a condition of that shape
  // and the count on both sides; pointwise, so it stays in the reduction
  // kernel (full() would be an ATen segment of its own).
  Val* shape_of_avg = pointwise(OpType::isnan, {avg});
  auto* n = pointwise(OpType::where, {shape_of_avg, count, count})->as<TensorView>();
  return {
      avg, cast(var_sum, var->dtype())->as<TensorView>(), cast(n, DataType::Int)->as<TensorView>()};
}

}  // namespace nvfuse
