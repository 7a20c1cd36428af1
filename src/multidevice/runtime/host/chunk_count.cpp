#include "multidevice/runtime/host/chunk_count.h"

#include <algorithm>
#include <cstdlib>

namespace nvfuse {

namespace {

int64_t env_int(const char* name, int64_t fallback) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') {
    return fallback;
  }
  const long long parsed = std::atoll(value);
  return parsed > 0 ? parsed : fallback;
}

}  // namespace

int64_t choose_chunks(int64_t rows) {
  if (rows <= 0) {
    return 1;
  }
  if (const int64_t asked = env_int("NVFUSE_OVERLAP_CHUNKS", 0); asked > 0) {
    for (int64_t s = std::min(asked, rows); s > 1; --s) {
      if (rows % s == 0) {
        return s;
      }
    }
    return 1;
  }
  return rows % 2 == 0 && rows / 2 >= kMinChunkRows ? 2 : 1;
}

int64_t worker_stream_count(int64_t chunks) {
  return std::max<int64_t>(1, std::min(chunks, env_int("NVFUSE_OVERLAP_STREAMS", 2)));
}

}  // namespace nvfuse
