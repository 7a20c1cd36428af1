// Runs one communication of the host program for this process through its
// team's c10d process group, on the current stream (NCCL work is ordered
// after what the stream already holds; Gloo work completes before return).
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

#include "multidevice/communication.h"
#include "multidevice/runtime/communicator.h"

namespace nvfuse {

// This device's team of a communication: its ranks in mesh order (shard k
// lives on members()[k]) and the c10d group that numbers them in sorted
// order (none for a team of one). Empty when the device takes no part.
class Team {
 public:
  Team() = default;
  Team(std::vector<int64_t> members, Communicator& communicator);

  bool empty() const { return members_.empty(); }
  int64_t size() const { return static_cast<int64_t>(members_.size()); }
  const std::vector<int64_t>& members() const { return members_; }
  c10d::ProcessGroup& group() const { return *group_; }
  // The group rank of `device`.
  int64_t group_rank(int64_t device) const;
  // Chunks indexed by group rank, reordered to shard order (or back with
  // `to_group_order`), along dim 0; unchanged when the orders agree.
  at::Tensor reorder(const at::Tensor& chunks, bool to_group_order) const;

 private:
  std::vector<int64_t> members_;
  std::vector<int64_t> sorted_;
  c10::intrusive_ptr<c10d::ProcessGroup> group_;
};

struct CommunicationSite {
  int64_t device;             // this process's rank
  c10::Device tensor_device;  // where a received buffer is allocated
  at::ScalarType dtype;       // the communicated tensor's element type
  int64_t rank;               // the communicated tensor's rank
};

using CommunicationWork = c10::intrusive_ptr<c10d::Work>;

// `input`: this device's value of comm.tensor (undefined where it holds
// none); `team`: this device's team of `comm`, not empty. Returns its value
// of the communicated result: the gathered, reduced, scattered or received
// tensor, or undefined where this device gets none.
// With `deferred`, a collective whose result is its own buffer (Allreduce,
// ReduceScatter) is left in flight and its work stored there (else null):
// the caller waits on it before anything reads the result, so that work in
// between overlaps it. Otherwise the current stream waits for it here.
at::Tensor post_communication(const Communication& comm, const Team& team, const at::Tensor& input,
    const CommunicationSite& site, CommunicationWork* deferred = nullptr);

}  // namespace nvfuse
