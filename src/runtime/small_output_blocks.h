// Small outputs of one execute() call share blocks of memory.
//
// Each output a kernel writes comes from torch's caching allocator, and on
// the GPU machines' hosts an allocation there costs about 4 us (its lock,
// its free-block search, its statistics), as much as a kernel launch. A
// batch-norm region makes five or six tensors a call, most of them
// per-channel statistics of a few kilobytes: means, inverse deviations,
// partial sums between its kernels. While a SmallOutputBlocks scope is
// alive on a thread, each CUDA output of at most kLargestShared bytes is
// carved from a block allocated once for several (128-byte aligned, as
// the allocator's own are for the vector widths the heuristics check);
// each keeps the whole block alive, a few kilobytes held a little longer.
//
// The tensors share a storage (is_alias_of is true between them) but no
// memory; the checks that decide whether tensors overlap compare memory
// ranges. Calls under a CUDA graph capture allocate as before: the
// graph's pool and torch's liveness checks of a captured graph's outputs
// go by storage.
//
// On by default (set_shared_small_outputs; NVFUSE_SHARED_SMALL_OUTPUTS=0
// at start turns it off): on one H200 machine it took a call making three
// small outputs from 25.5 to 20.9 us of host time.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>

namespace nvfuse {

class SmallOutputBlocks {
 public:
  static constexpr int64_t kLargestShared = 16 * 1024;
  static constexpr int64_t kAlignment = 128;

  // `first_block_bytes`: what the call is expected to carve (the last
  // call's total, say); at least one largest tensor's worth is allocated.
  explicit SmallOutputBlocks(int64_t first_block_bytes);
  ~SmallOutputBlocks();
  SmallOutputBlocks(const SmallOutputBlocks&) = delete;
  SmallOutputBlocks& operator=(const SmallOutputBlocks&) = delete;

  // The bytes carved so far (aligned), for the next call's first block.
  int64_t carved_bytes() const { return carved_; }

  // An uninitialized tensor of these sizes and strides (dense in some
  // order) carved from a block on `device`; nullopt when it is too large,
  // not on a CUDA device, or the device's current stream is capturing.
  std::optional<at::Tensor> carve(
      at::IntArrayRef sizes, at::IntArrayRef strides, at::ScalarType dtype, c10::Device device);

 private:
  int64_t first_block_bytes_;
  SmallOutputBlocks* outer_;
  at::Tensor block_;  // uint8, on the device of the last carve
  int64_t used_ = 0;
  int64_t carved_ = 0;
};

// The innermost scope alive on this thread, or nullptr.
SmallOutputBlocks* current_small_output_blocks();

// Whether execute() opens a scope at all (see above; off by default).
void set_shared_small_outputs(bool on);
bool shared_small_outputs();

}  // namespace nvfuse
