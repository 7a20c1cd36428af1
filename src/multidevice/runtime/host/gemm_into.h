// A chunk's GEMM written into a view of the result, on the current stream:
// the chunk's rows are [devices, rows..., K] and its result's
// [devices, rows..., N], either possibly strided over the devices (a
// device's rows of one chunk are not next to the next device's).
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>

namespace nvfuse {

// `b`: [K, N] (a matmul's right operand, or a linear's weight transposed);
// `bias`: [N] or none. One cuBLAS GEMM when both views flatten to
// matrices, else one strided-batched GEMM over the devices: no copies.
void gemm_into(at::Tensor dst, const at::Tensor& a, const at::Tensor& b,
    const std::optional<at::Tensor>& bias);

}  // namespace nvfuse
