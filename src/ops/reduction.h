// Reductions: sum, prod, max, min, var and var_mean over a set of axes, with
// torch's result types (integer sums accumulate in Int; var of a complex
// tensor is real).
#pragma once

#include <utility>
#include <vector>

#include "ir/op_table.h"
#include "ir/tensor_view.h"

namespace nvfuse {

// `op` is add (sum), mul (prod), maximum (max) or minimum (min). Empty
// `axes` reduces every axis. `dtype` (Null = default) casts the input first.
TensorView* reduce(
    OpType op, TensorView* in, const std::vector<int64_t>& axes, bool keepdim, DataType dtype);

// (var, mean); var divides by N - correction.
std::pair<TensorView*, TensorView*> var_mean(
    TensorView* in, const std::vector<int64_t>& axes, int64_t correction, bool keepdim);

// sum / N over `axes` (N: the product of their extents), for floating-point
// (or complex) inputs, as torch.mean.
TensorView* mean(TensorView* in, const std::vector<int64_t>& axes, bool keepdim, DataType dtype);

// nvFuser's welford: (avg, var_sum, n) over `axes`, var_sum = the sum of
// squared deviations, n (Int) = the number of values reduced; no keepdim.
struct WelfordResult {
  TensorView* avg;
  TensorView* var_sum;
  TensorView* n;
};
WelfordResult welford(TensorView* in, const std::vector<int64_t>& axes);

}  // namespace nvfuse
