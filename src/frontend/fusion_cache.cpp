#include "frontend/fusion_cache.h"

#include <algorithm>
#include <cstdlib>
#include <string>

namespace nvfuse {

std::string CachedFusion::repro_script() const {
  return nvfuse::repro_script(records, "nvfuse_fusion_id" + std::to_string(id));
}

namespace {

int64_t max_runtime_states_from_environment() {
  const char* text = std::getenv("NVFUSE_CACHE_MAX");
  if (text == nullptr || *text == '\0') {
    return FusionCache::kDefaultMaxRuntimeStates;
  }
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  NVFUSE_CHECK(
      *end == '\0' && value >= 1, "NVFUSE_CACHE_MAX must be a positive integer, got '", text, "'");
  return value;
}

}  // namespace

FusionCache::FusionCache() : max_runtime_states_(max_runtime_states_from_environment()) {}

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
  entry.sharded = std::any_of(entry.records.begin(), entry.records.end(),
      [](const Record& r) { return r.kind == RecordKind::SetDeviceMesh; });
  entry.fusion = state.release_fusion();
  ids_by_hash_.emplace(hash, id);
  return id;
}

CachedFusion& FusionCache::at(int64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  NVFUSE_CHECK(id >= 0 && id < static_cast<int64_t>(entries_.size()), "no cached fusion has id ",
      id, " (the cache holds ", entries_.size(), ")");
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
  recently_used_.clear();
  use_position_.clear();
}

void FusionCache::note_use(int64_t id) {
  std::vector<CachedFusion*> victims;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = use_position_.find(id);
    if (it != use_position_.end()) {
      recently_used_.splice(recently_used_.begin(), recently_used_, it->second);
      return;
    }
    recently_used_.push_front(id);
    use_position_[id] = recently_used_.begin();
    victims = take_over_the_bound();
  }
  free_runtime_states(victims);
}

std::vector<CachedFusion*> FusionCache::take_over_the_bound() {
  std::vector<CachedFusion*> victims;
  while (static_cast<int64_t>(recently_used_.size()) > max_runtime_states_) {
    const int64_t id = recently_used_.back();
    recently_used_.pop_back();
    use_position_.erase(id);
    victims.push_back(&entries_[id]);
  }
  return victims;
}

void FusionCache::free_runtime_states(const std::vector<CachedFusion*>& victims) {
  for (CachedFusion* entry : victims) {
    std::shared_ptr<RuntimeState> freed;
    {
      std::lock_guard<std::mutex> lock(entry->mutex);
      freed = std::move(entry->runtime_state);
    }
    // `freed` goes here, outside the entry's lock, or with the last call
    // still using it.
  }
}

int64_t FusionCache::max_runtime_states() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return max_runtime_states_;
}

void FusionCache::set_max_runtime_states(int64_t max) {
  NVFUSE_CHECK(max >= 1, "the cache bound must be at least 1, got ", max);
  std::vector<CachedFusion*> victims;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    max_runtime_states_ = max;
    victims = take_over_the_bound();
  }
  free_runtime_states(victims);
}

int64_t FusionCache::num_runtime_states() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int64_t>(recently_used_.size());
}

void FusionCache::release_sharded_runtime_states() {
  std::vector<CachedFusion*> sharded;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (CachedFusion& entry : entries_) {
      if (entry.sharded) {
        sharded.push_back(&entry);
      }
    }
  }
  free_runtime_states(sharded);
}

}  // namespace nvfuse
