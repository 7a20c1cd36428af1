// Compiled kernels: each (source, arch, options, NVRTC version) is compiled
// at most once per machine. Looked up in memory, then on disk
// (NVFUSE_CACHE_DIR, default ~/.cache/nvfuse; NVFUSE_DISK_CACHE=0 turns the
// disk cache off), then compiled with NVRTC. Modules are loaded once per
// device.
#pragma once

#include <string>

#include "runtime/cuda/cuda_driver.h"

namespace nvfuse {

struct LoadedKernel {
  std::string name;  // the kernel function's, for NVTX ranges
  void* function = nullptr;
  cuda_driver::FunctionResources resources;
};

// The kernel `name` of `source`, compiled for and loaded on `device` (whose
// context is made current).
const LoadedKernel& load_kernel(const std::string& source, const std::string& name, int device);

// Tiered compilation: load_kernel_when_compiled returns nullptr for a
// kernel that is neither loaded nor in a cache, and compiles it on a thread
// of its own; a later call loads it once that compile has finished (until
// then the caller runs the work another way: the ATen reference
// evaluator). Off by default; NVFUSE_TIERED_COMPILE=1 turns it on at
// start. load_kernel waits for a compile already under way.
const LoadedKernel* load_kernel_when_compiled(
    const std::string& source, const std::string& name, int device);
void set_tiered_compile(bool on);
bool tiered_compile();

// The folder the disk cache uses (created on demand), or empty when off.
std::string kernel_cache_directory();

}  // namespace nvfuse
