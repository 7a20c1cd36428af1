// The three views of a tensor's axes:
//  - logical: its semantic shape, as the user defined it;
//  - allocation: how its memory is laid out, outer to inner (contiguity is
//    given against it); a permutation of logical for `stride_order`, or
//    axes derived by Split/Merge (e.g. a DID split for sharding);
//  - loop: how it is iterated or distributed.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/iter_domain.h"

namespace nvfuse {

class TensorDomain {
 public:
  TensorDomain() = default;
  // Allocation and loop start equal to logical. `contiguity` is aligned with
  // the allocation domain; empty means contiguous (None for broadcasts).
  explicit TensorDomain(
      std::vector<IterDomain*> logical, std::vector<std::optional<bool>> contiguity = {});

  const std::vector<IterDomain*>& logical() const { return logical_; }
  const std::vector<IterDomain*>& allocation() const { return allocation_; }
  const std::vector<IterDomain*>& loop() const { return loop_; }
  const std::vector<std::optional<bool>>& contiguity() const { return contiguity_; }
  int64_t rank() const { return static_cast<int64_t>(logical_.size()); }

  // Checks that contiguity is None exactly on broadcast axes.
  void set_allocation(
      std::vector<IterDomain*> allocation, std::vector<std::optional<bool>> contiguity);
  void set_loop(std::vector<IterDomain*> loop) { loop_ = std::move(loop); }

  // True when the allocation domain differs from the logical one.
  bool has_allocation() const { return allocation_ != logical_; }
  // When allocation is a permutation of logical: for each allocation
  // position, the logical axis there. nullopt for derived allocation axes.
  std::optional<std::vector<int64_t>> allocation_permutation() const;

  // Contiguous (None for broadcast axes) for `allocation`.
  static std::vector<std::optional<bool>> contiguous_for(
      const std::vector<IterDomain*>& allocation);

 private:
  std::vector<IterDomain*> logical_;
  std::vector<IterDomain*> allocation_;
  std::vector<IterDomain*> loop_;
  std::vector<std::optional<bool>> contiguity_;
};

// `stride_order[i]` is the stride rank of logical axis i (0 = fastest).
// Returns the allocation permutation: logical axes, outermost first.
std::vector<int64_t> allocation_order_from_stride_order(const std::vector<int64_t>& stride_order);
// The inverse: stride_order from an allocation permutation.
std::vector<int64_t> stride_order_from_allocation_order(
    const std::vector<int64_t>& allocation_order);

}  // namespace nvfuse
