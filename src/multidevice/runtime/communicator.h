// The process's communicator: which device (rank) this process is, and one
// torch c10d process group per team, created on first use and cached.
//
// torch.distributed owns the processes' rendezvous: nvfuse.multidevice
// bootstraps it from the torchrun/mpirun environment (or reuses an
// initialized default group) and configures this communicator with a group
// factory, which creates a group with torch.distributed.new_group (NCCL for
// CUDA tensors, Gloo for CPU tensors, the timeout of the default group) and
// returns its name; the group itself is then resolved from c10d's registry.
// Device ids of meshes are ranks.
#pragma once

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace nvfuse {

class Communicator {
 public:
  // Creates the group of `ranks` (sorted) in every process and returns its
  // c10d name ("" outside it); every process calls it for the same teams in
  // the same order.
  using GroupFactory = std::function<std::string(const std::vector<int64_t>& ranks)>;

  static Communicator& get();

  // Forgets the groups of an earlier configuration.
  void configure(int64_t rank, int64_t world_size, int64_t local_rank, GroupFactory factory);
  bool is_configured() const;
  // Drops the process groups and the configuration (at exit, before
  // torch.distributed is torn down: c10d's groups must not outlive it).
  void release();
  // Changes with every configure: what was derived from the old
  // configuration (teams, groups) must be derived again.
  int64_t generation() const;
  int64_t rank() const;
  int64_t world_size() const;
  int64_t local_rank() const;

  // The group of `team` (any order; a team is a set of ranks); null in a
  // process outside the team.
  c10::intrusive_ptr<c10d::ProcessGroup> group(std::vector<int64_t> team);

 private:
  Communicator() = default;

  mutable std::mutex mutex_;
  int64_t rank_ = -1;
  int64_t world_size_ = 0;
  int64_t local_rank_ = -1;
  int64_t generation_ = 0;
  GroupFactory factory_;
  std::map<std::vector<int64_t>, c10::intrusive_ptr<c10d::ProcessGroup>> groups_;
};

}  // namespace nvfuse
