// Output tensors laid out by their allocation domain: the user gets the
// logical shape with permuted strides (stride_order), never a permutation.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

#include "ir/tensor_view.h"

namespace nvfuse {

// An uninitialized tensor of `tv`'s layout, from torch's allocator.
at::Tensor allocate_output(
    const TensorView& tv, at::IntArrayRef logical_sizes, const at::TensorOptions& options);

// Whether `t` has `strides` on every axis longer than one (a size-1 axis's
// stride addresses nothing: channels-last tensors and views leave any
// there).
bool laid_out_as(const at::Tensor& t, const std::vector<int64_t>& strides);

// `value` in `tv`'s layout on `device`: `value` itself when it already has
// that layout and shares no memory with `inputs`, else a copy.
at::Tensor materialize_output(const TensorView& tv, const at::Tensor& value,
    const std::vector<at::Tensor>& inputs, c10::Device device);

}  // namespace nvfuse
