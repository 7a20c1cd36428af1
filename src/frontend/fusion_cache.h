// The process-wide cache of definitions. A definition written again, even in
// a new FusionDefinition, has the same records, finds the same entry, and so
// reuses its IR and everything the runtime compiled for it.
#pragma once

#include <deque>
#include <list>
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
  // from the definition when it has none: on first use, or after an
  // eviction. At most max_runtime_states() unsharded entries keep one; using
  // an entry makes it the most recent, and the least recently used beyond
  // the bound are freed (kernels, schedules, their device modules; the
  // records, the IR and the disk kernel cache stay, so the next call
  // rebuilds from the disk cache). Callers hold the returned pointer for the
  // length of their call: an eviction meanwhile frees nothing in use.
  // Sharded entries are never evicted: rebuilding one creates process
  // groups, a collective every rank would have to join at the same call.
  template <typename State>
  std::shared_ptr<State> runtime_state_of(CachedFusion& entry) {
    std::shared_ptr<RuntimeState> state;
    {
      std::lock_guard<std::mutex> lock(entry.mutex);
      if (entry.runtime_state == nullptr) {
        entry.runtime_state = std::make_shared<State>(*entry.fusion);
      }
      state = entry.runtime_state;
    }
    if (!entry.sharded) {
      note_use(entry.id);
    }
    return std::static_pointer_cast<State>(state);
  }
  // NVFUSE_CACHE_MAX, else kDefaultMaxRuntimeStates.
  static constexpr int64_t kDefaultMaxRuntimeStates = 1024;
  int64_t max_runtime_states() const;
  // Lowering the bound evicts down to it now; values below 1 are an error.
  void set_max_runtime_states(int64_t max);
  // Unsharded entries holding a runtime state.
  int64_t num_runtime_states() const;
  // Frees the runtime states of the sharded entries (at exit: their
  // executors hold process groups that must go before torch.distributed).
  void release_sharded_runtime_states();

 private:
  FusionCache();
  // Marks entry `id` the most recently used and frees the states beyond the
  // bound.
  void note_use(int64_t id);
  // Takes the least recently used ids beyond the bound off the use list and
  // returns their entries; called with `mutex_` held.
  std::vector<CachedFusion*> take_over_the_bound();
  // Frees the entries' states, each under its own mutex and never under the
  // cache's (a caller making an entry's state holds that entry's mutex and
  // then takes the cache's: the reverse order would deadlock).
  static void free_runtime_states(const std::vector<CachedFusion*>& victims);

  mutable std::mutex mutex_;
  std::deque<CachedFusion> entries_;
  std::unordered_multimap<size_t, int64_t> ids_by_hash_;
  int64_t max_runtime_states_;
  std::list<int64_t> recently_used_;  // most recent first
  std::unordered_map<int64_t, std::list<int64_t>::iterator> use_position_;
};

}  // namespace nvfuse
