// The copy-engine loops' access to torch's symmetric memory
// (torch.distributed._symmetric_memory): each device copies its shard into
// a buffer every device of its team can read, and peers read it with the
// copy engine (cudaMemcpyAsync through NVLink), so the SMs stay with the
// GEMM. nvfuse does not link torch's CUDA library, so Python does the
// symmetric-memory calls (nvfuse.multidevice.symmetric_memory); the
// bindings register them here. Chosen per call under the default "auto"
// (multidevice/overlap_backend.h), always with NVFUSE_OVERLAP_BACKEND=symm_mem
// or nvfuse.multidevice.set_overlap_backend("symm_mem"), never with
// "nccl".
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
  // Every device of the group at once: whether each device of the group
  // can read every other's memory (same host, peer access), the same
  // answer on every device; asked once per group and device.
  std::function<bool(const at::Tensor& like, const std::string& group)> peers_reachable;
};

// Set once, when the Python module loads, before any fusion runs.
void set_symmetric_memory_hooks(SymmetricMemoryHooks hooks);
const SymmetricMemoryHooks& symmetric_memory_hooks();

}  // namespace nvfuse
