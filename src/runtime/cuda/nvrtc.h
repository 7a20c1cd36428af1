// NVRTC, loaded at run time: compiles generated CUDA C++ to a cubin (or PTX
// when NVRTC does not know the GPU's architecture). Needs no GPU, so the
// generated kernels are compiled in tests on CPU-only machines too.
#pragma once

#include <string>
#include <vector>

namespace nvfuse {

struct CompiledBinary {
  std::string image;  // cubin bytes, or PTX text when is_ptx
  bool is_ptx = false;
  std::string log;  // NVRTC's compile log (warnings)
  double compile_ms = 0.0;
};

struct NvrtcVersion {
  int major = 0;
  int minor = 0;
};

// The loaded NVRTC's version; loads NVRTC on first use.
NvrtcVersion nvrtc_version();

// Compiles `source` for sm_<arch> (e.g. 90). Options always include
// --std=c++17 and -default-device; `extra_options` are appended. A compile
// error throws an InternalError carrying NVRTC's log and the source.
CompiledBinary compile_cuda(const std::string& source, const std::string& name, int arch,
    const std::vector<std::string>& extra_options = {});

// The options compile_cuda passes for `arch` (part of the kernel cache key).
std::vector<std::string> nvrtc_options(int arch, const std::vector<std::string>& extra_options);

}  // namespace nvfuse
