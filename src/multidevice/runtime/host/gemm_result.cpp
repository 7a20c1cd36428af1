#include "multidevice/runtime/host/gemm_result.h"

#include <ATen/ATen.h>

#include "ir/all_exprs.h"
#include "multidevice/runtime/host/run_host_instructions.h"
#include "runtime/aten_types.h"

namespace nvfuse {

int64_t gemm_columns(const at::Tensor& b, bool linear) { return linear ? b.size(0) : b.size(1); }

std::vector<int64_t> gemm_result_sizes(const at::Tensor& a, const at::Tensor& b, bool linear,
    int64_t axis, int64_t devices, bool gathered) {
  std::vector<int64_t> sizes = a.sizes().vec();
  sizes[axis] = gathered ? sizes[axis] * devices : sizes[axis] / devices;
  sizes.back() = gemm_columns(b, linear);
  return sizes;
}

Allocate allocate_gemm_result(
    const HostLoopProgram& p, Slot a, Slot b, const Expr& gemm, int64_t axis, bool gathered) {
  const bool linear = gemm.is<LinearOp>();
  const at::ScalarType dtype = to_aten(gemm.output(0)->dtype());
  return Allocate{p.result,
      p.slot_names[a] + " with axis " + std::to_string(axis) +
          (gathered ? " gathered" : " scattered") + " and the last N",
      [=](const HostFrame& f) {
        const at::Tensor& left = f.slots[a];
        return at::empty(
            gemm_result_sizes(left, f.slots[b], linear, axis, f.team->size(), gathered),
            left.options().dtype(dtype));
      }};
}

}  // namespace nvfuse
