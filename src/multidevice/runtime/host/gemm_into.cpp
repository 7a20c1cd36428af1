#include "multidevice/runtime/host/gemm_into.h"

#include <ATen/ATen.h>

namespace nvfuse {

namespace {

// [devices, rows..., last] as [devices, rows, last] (a view: within one
// device the rows of a chunk are contiguous).
at::Tensor as_batches(const at::Tensor& t) {
  if (t.dim() == 2) {
    return t.unsqueeze(1);
  }
  return t.dim() == 3 ? t : t.flatten(1, -2);
}

}  // namespace

void gemm_into(at::Tensor dst, const at::Tensor& a, const at::Tensor& b,
    const std::optional<at::Tensor>& bias) {
  if (dst.dim() == 2) {
    // One device's rows: one GEMM, whatever a's strides.
    if (bias.has_value()) {
      at::addmm_out(dst, *bias, a, b);
    } else {
      at::mm_out(dst, a, b);
    }
    return;
  }
  at::Tensor out3 = as_batches(dst);
  const at::Tensor a3 = as_batches(a);
  if (out3.is_contiguous() && a3.is_contiguous()) {
    at::Tensor out2 = out3.view({-1, out3.size(2)});
    const at::Tensor a2 = a3.view({-1, a3.size(2)});
    if (bias.has_value()) {
      at::addmm_out(out2, *bias, a2, b);
    } else {
      at::mm_out(out2, a2, b);
    }
    return;
  }
  const at::Tensor b3 = b.unsqueeze(0).expand({a3.size(0), b.size(0), b.size(1)});
  if (bias.has_value()) {
    at::baddbmm_out(out3, bias->expand_as(out3), a3, b3);
  } else {
    at::bmm_out(out3, a3, b3);
  }
}

}  // namespace nvfuse
