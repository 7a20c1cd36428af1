// What every generated-kernel executor does per call, apart from
// scheduling: describing tensors to the heuristics, poisoning fresh outputs
// for tests, computing by-value arguments, packing the Args block by its
// layout, and launching on torch's current stream.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "codegen/kernel_args.h"
#include "ir/fusion.h"
#include "runtime/aten_types.h"
#include "runtime/input_binding.h"
#include "runtime/cuda/kernel_cache.h"
#include "schedule/tensor_arg.h"

namespace nvfuse {

// Logical sizes of `outputs` from the bound extents; nullopt when one is
// not known before running.
std::optional<std::vector<std::vector<int64_t>>> output_sizes_of(
    const std::vector<const TensorView*>& outputs, BoundInputs& bound);

TensorArg tensor_arg_of(const at::Tensor& t);
DeviceInfo device_info_of(c10::Device device);

// Whether a second kernel that reads what the kernel before it on the
// stream wrote, and starts with griddepcontrol.wait, is launched as that
// kernel's programmatic dependent (launch_on_current_stream's
// `programmatic`): on sm_90 and later, unless NVFUSE_PROGRAMMATIC_LAUNCH=0.
// Its blocks are then scheduled as the first kernel's blocks finish, not
// after a launch that waits for the whole first kernel (an inner-outer kernel's finishing kernel:
// up to 6 points of copy bandwidth on an H100, layer-norm and RMS-norm backward).
bool programmatic_launches(c10::Device device);

// NVFUSE_POISON_OUTPUTS=1: fill fresh outputs with NaN (or -123) so that
// tests catch elements a kernel never writes.
bool poison_outputs();

// Rejects a launch-shape tuning (set_*_tuning) a kernel cannot take: block
// sizes must be whole warps up to 1024, the unroll and the amount per
// thread (named `per_thread_name`: elements, bytes) at least 1.
void check_launch_tuning(
    int block_size, int max_unroll, int per_thread, const char* per_thread_name);
void poison(at::Tensor& t);

// Everything a layout's fields may ask for; fields a kernel lacks are unused.
struct LaunchValues {
  std::vector<void*> pointers;      // per kernel tensor
  std::vector<ScalarValue> values;  // per value input
  int64_t numel = 0;                // iteration numel, or rows
  std::vector<int64_t> extents;
  std::vector<std::vector<int64_t>> strides;  // per kernel tensor
  int64_t width = 0;
  std::vector<int64_t> col_strides;  // per kernel tensor
  void* workspace = nullptr;
  void* semaphores = nullptr;
  int64_t partial_rows = 0;
  int64_t lane_shift = 0;  // log2 of the lanes a row takes (width-generic kernels)
  // Random ops launched into a CUDA graph capture: torch's seed and offset
  // on the device (nullptr outside a capture; see runtime/rng_state.h).
  const void* graph_rng[2] = {nullptr, nullptr};
  std::vector<int64_t> divisors;  // what each FastDivider divides by
};

// The Args block, 8-byte aligned.
std::vector<uint64_t> pack_args(const KernelArgLayout& layout, const LaunchValues& values);

// Launches on torch's current stream of `device` (in clusters of
// `cluster_x` blocks when above 1; as the programmatic dependent of the
// stream's previous kernel when `programmatic`, which only a kernel that
// starts with griddepcontrol.wait may ask for); NVFUSE_DUMP=launch prints describe()
// (called only then: launches stay free of string building).
void launch_on_current_stream(const LoadedKernel& kernel, c10::Device device,
    cuda_driver::Dim3 grid, cuda_driver::Dim3 block, std::vector<uint64_t>& args,
    const std::function<std::string()>& describe, unsigned shared_bytes = 0, unsigned cluster_x = 1,
    bool programmatic = false);

}  // namespace nvfuse
