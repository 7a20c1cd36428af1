// The copy-engine loops' access to torch's symmetric memory
// (torch.distributed._symmetric_memory): each device copies its shard into
// a buffer every device of its team can read, and peers read it with the
// copy engine (cudaMemcpyAsync through NVLink), so the SMs stay with the
// GEMM. nvfuse does not link torch's CUDA library, so Python does the
// symmetric-memory calls (nvfuse.multidevice.symmetric_memory); the
// bindings register them here. Chosen by NVFUSE_OVERLAP_BACKEND=symm_mem
// or nvfuse.multidevice.set_overlap_backend("symm_mem"); NCCL is the
// default.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <string>

namespace nvfuse {

struct SymmetricMemoryHooks {
  // On the current stream: a barrier over the group (nobody still reads
  // this device's buffer), `local` into it, a barrier (every device's
  // shard is there).
  std::function<void(const at::Tensor& local, const std::string& group)> publish;
  // On the current stream: `dst` from the buffer of group rank `peer`.
  std::function<void(const at::Tensor& dst, int64_t peer, const std::string& group)> pull;
  // On the current stream: a barrier over the group.
  std::function<void(const std::string& group)> barrier;
  // Every device of the group at once: a buffer of at least `nbytes` on
  // `like`'s device.
  std::function<void(const at::Tensor& like, int64_t nbytes, const std::string& group)> reserve;
  // On the current stream: `src` into slot `slot` (of src's size) of the
  // buffer of group rank `peer`.
  std::function<void(const at::Tensor& src, int64_t peer, int64_t slot, const std::string& group)>
      push;
  // On the current stream: `out` = the sum of the first `slots` slots (of
  // out's size) of this device's buffer.
  std::function<void(const at::Tensor& out, int64_t slots, const std::string& group)> sum;
};

// Set once, when the Python module loads, before any fusion runs.
void set_symmetric_memory_hooks(SymmetricMemoryHooks hooks);
const SymmetricMemoryHooks& symmetric_memory_hooks();

enum class OverlapBackend { kNccl, kSymmetricMemory };
// NVFUSE_OVERLAP_BACKEND at first use ("nccl" or "symm_mem"), until set.
OverlapBackend overlap_backend();
void set_overlap_backend(OverlapBackend backend);

}  // namespace nvfuse
