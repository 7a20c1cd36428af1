// What the pointwise and the transpose kernels share: the kernel tensors
// and their Args layout, and `fused`, the fusion's exprs as one device
// function from one element of every input to one of every output.
#pragma once

#include <string>
#include <vector>

#include "codegen/kernel_args.h"
#include "ir/fusion.h"
#include "schedule/pointwise_analysis.h"
#include "schedule/pointwise_params.h"

namespace nvfuse {

// The analysis's inputs, then its outputs: the order of pointers, strides
// and PointwiseParams' per-tensor entries.
std::vector<const TensorView*> kernel_tensors(const PointwiseAnalysis& analysis);

// Whether the kernel splits a group's position into coordinates by
// magic-number division (args.divider, nvfuse::fast_div: exact below 2^31,
// so with 32-bit indices) rather than an integer divide per axis.
bool divides_by_magic_numbers(const PointwiseParams& params);

// Pointers, value inputs, numel, the collapsed extents, their dividers
// (divides_by_magic_numbers) and every tensor's collapsed strides.
KernelArgLayout pointwise_arg_layout(
    const PointwiseAnalysis& analysis, const PointwiseParams& params);

// `__device__ void fused(const Args& args, <inputs>, <outputs by reference>)`.
std::string fused_element_function(const Fusion& fusion, const PointwiseAnalysis& analysis);

// The whole kernel: the device runtime, a header naming `scheduler` and
// the params, the Index type, Args, fused() and `kernel_function`.
KernelSource assemble_pointwise_kernel(const Fusion& fusion, const PointwiseAnalysis& analysis,
    const PointwiseParams& params, const std::string& scheduler,
    const std::string& kernel_function);

}  // namespace nvfuse
