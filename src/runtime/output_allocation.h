// Output tensors laid out by their allocation domain: the user gets the
// logical shape with permuted strides (stride_order), never a permutation.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

#include "ir/tensor_view.h"

namespace nvfuse {

// An uninitialized tensor of these sizes and strides on `device`, from
// torch's allocator. On a CUDA device it asks the allocator torch.cuda
// uses (the caching allocator, or a pluggable one put in its place)
// directly, as ATen's own CUDA empty does inside its operator and
// Inductor's generated code does for its buffers, instead of going
// through the dispatcher: at::empty_strided took 2.4 us an output on the
// H200 machines' hosts, and a ResNet-50 training step allocates about
// 500. Memory pools, CUDA-graph capture and the allocator's statistics
// live inside the allocator, so they see these tensors as any other.
// What differs from at::empty_strided: no profiler event, and no NaN fill
// under torch.use_deterministic_algorithms's fill_uninitialized_memory
// (every output here is written by its kernel before anyone reads it).
at::Tensor empty_strided_on(
    at::IntArrayRef sizes, at::IntArrayRef strides, at::ScalarType dtype, c10::Device device);

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
