#include "multidevice/runtime/communicator.h"

#include <torch/csrc/distributed/c10d/GroupRegistry.hpp>

#include <algorithm>

#include "ir/errors.h"

namespace nvfuse {

Communicator& Communicator::get() {
  static Communicator communicator;
  return communicator;
}

void Communicator::configure(
    int64_t rank, int64_t world_size, int64_t local_rank, GroupFactory factory) {
  std::lock_guard<std::mutex> lock(mutex_);
  NVFUSE_CHECK(world_size > 0 && rank >= 0 && rank < world_size, "communicator: rank ", rank,
      " is not in a world of ", world_size, " processes");
  rank_ = rank;
  world_size_ = world_size;
  local_rank_ = local_rank;
  factory_ = std::move(factory);
  groups_.clear();
  ++generation_;
}

void Communicator::release() {
  std::map<std::vector<int64_t>, c10::intrusive_ptr<c10d::ProcessGroup>> groups;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    groups.swap(groups_);
    factory_ = nullptr;
    rank_ = -1;
    world_size_ = 0;
    local_rank_ = -1;
    ++generation_;
  }
}

bool Communicator::is_configured() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return world_size_ > 0;
}

int64_t Communicator::generation() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return generation_;
}

int64_t Communicator::rank() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return rank_;
}

int64_t Communicator::world_size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return world_size_;
}

int64_t Communicator::local_rank() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return local_rank_;
}

c10::intrusive_ptr<c10d::ProcessGroup> Communicator::group(std::vector<int64_t> team) {
  std::sort(team.begin(), team.end());
  std::lock_guard<std::mutex> lock(mutex_);
  NVFUSE_ASSERT(factory_ != nullptr, "the communicator is not configured");
  if (auto it = groups_.find(team); it != groups_.end()) {
    return it->second;
  }
  for (int64_t r : team) {
    NVFUSE_CHECK_AS(ErrorKind::kInput, r >= 0 && r < world_size_, "device ", r,
        " of a mesh is not a rank of this world of ", world_size_, " processes; launch at least ",
        r + 1, " (e.g. torchrun --nproc-per-node=", r + 1, ")");
  }
  const std::string name = factory_(team);
  // Outside the team the group is created (every process must take part)
  // but not held: it is never posted to.
  auto group =
      name.empty() ? c10::intrusive_ptr<c10d::ProcessGroup>() : c10d::resolve_process_group(name);
  groups_.emplace(team, group);
  return group;
}

}  // namespace nvfuse
