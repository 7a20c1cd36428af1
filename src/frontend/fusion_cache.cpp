#include "frontend/fusion_cache.h"

#include <algorithm>

namespace nvfuse {

std::string CachedFusion::repro_script() const {
  return nvfuse::repro_script(
      records, "nvfuse_fusion_id" + std::to_string(id));
}

FusionCache& FusionCache::get() {
  static FusionCache* cache = new FusionCache();  // never destroyed: outlives
                                                  // Python's shutdown order
  return *cache;
}

int64_t FusionCache::insert_or_find(RecordingState&& state) {
  const size_t hash = state.hash();
  std::lock_guard<std::mutex> lock(mutex_);
  auto [begin, end] = ids_by_hash_.equal_range(hash);
  for (auto it = begin; it != end; ++it) {
    if (entries_[it->second].records == state.records()) {
      return it->second;
    }
  }
  const int64_t id = static_cast<int64_t>(entries_.size());
  CachedFusion& entry = entries_.emplace_back();
  entry.id = id;
  entry.hash = hash;
  entry.records = state.records();
  entry.states = state.states();
  entry.sharded = std::any_of(
      entry.records.begin(), entry.records.end(),
      [](const Record& r) { return r.kind == RecordKind::SetDeviceMesh; });
  entry.fusion = state.release_fusion();
  ids_by_hash_.emplace(hash, id);
  return id;
}

CachedFusion& FusionCache::at(int64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  NVFUSE_CHECK(
      id >= 0 && id < static_cast<int64_t>(entries_.size()),
      "no cached fusion has id ", id, " (the cache holds ", entries_.size(),
      ")");
  return entries_[id];
}

int64_t FusionCache::num_fusions() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int64_t>(entries_.size());
}

void FusionCache::reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.clear();
  ids_by_hash_.clear();
}

void FusionCache::release_sharded_runtime_states() {
  std::vector<CachedFusion*> entries;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (CachedFusion& entry : entries_) {
      if (entry.sharded) {
        entries.push_back(&entry);
      }
    }
  }
  for (CachedFusion* entry : entries) {
    std::shared_ptr<RuntimeState> freed;
    {
      std::lock_guard<std::mutex> lock(entry->mutex);
      freed = std::move(entry->runtime_state);
    }
  }
}

}  // namespace nvfuse
