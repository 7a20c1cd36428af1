#include "multidevice/runtime/host/symmetric_memory.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "ir/errors.h"

namespace nvfuse {

namespace {

SymmetricMemoryHooks& hooks() {
  static SymmetricMemoryHooks instance;
  return instance;
}

OverlapBackend backend_from_env() {
  const char* value = std::getenv("NVFUSE_OVERLAP_BACKEND");
  if (value == nullptr || *value == '\0' || std::strcmp(value, "nccl") == 0) {
    return OverlapBackend::kNccl;
  }
  NVFUSE_CHECK(std::strcmp(value, "symm_mem") == 0, "NVFUSE_OVERLAP_BACKEND=", value,
      ": the overlap backends are nccl and symm_mem");
  return OverlapBackend::kSymmetricMemory;
}

std::atomic<int>& backend_setting() {
  static std::atomic<int> setting{static_cast<int>(backend_from_env())};
  return setting;
}

}  // namespace

void set_symmetric_memory_hooks(SymmetricMemoryHooks h) { hooks() = std::move(h); }

const SymmetricMemoryHooks& symmetric_memory_hooks() { return hooks(); }

OverlapBackend overlap_backend() { return static_cast<OverlapBackend>(backend_setting().load()); }

void set_overlap_backend(OverlapBackend backend) {
  backend_setting().store(static_cast<int>(backend));
}

}  // namespace nvfuse
