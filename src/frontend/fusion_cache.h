// The process-wide cache of definitions. A definition written again, even in
// a new FusionDefinition, has the same records, finds the same entry, and so
// reuses its IR and everything the runtime compiled for it.
#pragma once

#include <memory>

#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "frontend/recording_state.h"

namespace nvfuse {

// What the runtime keeps for a cached fusion (compiled executors); the
// frontend only owns its lifetime.
class RuntimeState {
 public:
  virtual ~RuntimeState() = default;
};

struct CachedFusion {
  int64_t id;
  size_t hash;
  std::vector<Record> records;
  std::unique_ptr<Fusion> fusion;
  // The IR of each state of the definition, in `fusion`.
  std::vector<StateValue> states;
  // Some tensor has a device mesh (a set_device_mesh record): execute takes
  // the multi-device path. Kept so execute need not look.
  bool sharded = false;
  // Created by the runtime on first execution (FusionCache::runtime_state_of);
  // guarded by `mutex`.
  std::shared_ptr<RuntimeState> runtime_state;
  std::mutex mutex;

  std::string repro_script() const;
};

class FusionCache {
 public:
  static FusionCache& get();

  // The id of the cached fusion with the same records as `state`, adding
  // `state` (taking its IR) when there is none.
  int64_t insert_or_find(RecordingState&& state);
  CachedFusion& at(int64_t id);
  int64_t num_fusions() const;
  // Drops every entry (tests use this); ids restart at 0.
  void reset();

  // The runtime state of `entry` (its compiled executors), a `State` made
  // from the definition on first use. Callers hold the returned pointer for
  // the length of their call (release_sharded_runtime_states may free the
  // entry's at exit). Nothing is evicted yet: see docs/api.md.
  template <typename State>
  static std::shared_ptr<State> runtime_state_of(CachedFusion& entry) {
    std::lock_guard<std::mutex> lock(entry.mutex);
    if (entry.runtime_state == nullptr) {
      entry.runtime_state = std::make_shared<State>(*entry.fusion);
    }
    return std::static_pointer_cast<State>(entry.runtime_state);
  }
  // Frees the runtime states of the sharded entries (at exit: their
  // executors hold process groups that must go before torch.distributed).
  void release_sharded_runtime_states();

 private:
  FusionCache() = default;

  mutable std::mutex mutex_;
  std::deque<CachedFusion> entries_;
  std::unordered_multimap<size_t, int64_t> ids_by_hash_;
};

}  // namespace nvfuse
