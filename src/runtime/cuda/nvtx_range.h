// NVTX ranges around nvfuse's host work, in the domain "nvfuse": each
// execute (named by fusion id), each segment, each kernel launch (named by
// kernel) and each NVRTC compile. Nsight Systems shows them on the CPU
// timeline above the kernels they launched, and torch.profiler's NVTX
// tracing records them. NVTX is header-only: with no tool attached a range
// costs one indirect call, and without the NVTX headers at build time
// (NVFUSE_HAVE_NVTX=0) ranges compile to nothing.
#pragma once

#include <cstdint>
#include <string>

namespace nvfuse {

class NvtxRange {
 public:
  explicit NvtxRange(const char* message);
  explicit NvtxRange(const std::string& message) : NvtxRange(message.c_str()) {}
  // "<what> <number>", e.g. NvtxRange("nvfuse fusion", 12).
  NvtxRange(const char* what, int64_t number);
  // "<what> <detail>", e.g. NvtxRange("nvfuse segment", "reduction").
  NvtxRange(const char* what, const std::string& detail);
  ~NvtxRange();
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace nvfuse
