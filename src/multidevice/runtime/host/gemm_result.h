// The result buffer of a pipelined loop's GEMM, shaped from its operands
// per call: the left operand's sizes with the communicated axis gathered
// (times the team size) or scattered (divided by it), and the last axis
// the GEMM's columns.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

#include "multidevice/runtime/host/host_instructions.h"

namespace nvfuse {

// N: the columns of a GEMM whose right operand is `b`, a matmul's [K, N]
// or a linear's weight [N, K].
int64_t gemm_columns(const at::Tensor& b, bool linear);

// `b` as for gemm_columns.
std::vector<int64_t> gemm_result_sizes(const at::Tensor& a, const at::Tensor& b, bool linear,
    int64_t axis, int64_t devices, bool gathered);

// The Allocate of `p.result`, from slots `a` and `b` of `gemm`'s operands.
Allocate allocate_gemm_result(
    const HostLoopProgram& p, Slot a, Slot b, const Expr& gemm, int64_t axis, bool gathered);

}  // namespace nvfuse
