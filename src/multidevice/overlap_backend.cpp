#include "multidevice/overlap_backend.h"

#include <atomic>
#include <cstdlib>

#include "ir/errors.h"

namespace nvfuse {

namespace {

OverlapBackend backend_from_env() {
  const char* value = std::getenv("NVFUSE_OVERLAP_BACKEND");
  if (value == nullptr || *value == '\0') {
    return OverlapBackend::kAuto;
  }
  return overlap_backend_named(value, "NVFUSE_OVERLAP_BACKEND");
}

std::atomic<int>& backend_setting() {
  static std::atomic<int> setting{static_cast<int>(backend_from_env())};
  return setting;
}

}  // namespace

OverlapBackend overlap_backend() { return static_cast<OverlapBackend>(backend_setting().load()); }

void set_overlap_backend(OverlapBackend backend) {
  backend_setting().store(static_cast<int>(backend));
}

const char* overlap_backend_name(OverlapBackend backend) {
  switch (backend) {
    case OverlapBackend::kNccl:
      return "nccl";
    case OverlapBackend::kSymmetricMemory:
      return "symm_mem";
    case OverlapBackend::kAuto:
      return "auto";
  }
  return "auto";
}

OverlapBackend overlap_backend_named(const std::string& name, const char* where) {
  for (OverlapBackend backend :
      {OverlapBackend::kAuto, OverlapBackend::kNccl, OverlapBackend::kSymmetricMemory}) {
    if (name == overlap_backend_name(backend)) {
      return backend;
    }
  }
  NVFUSE_CHECK(false, where, "(\"", name,
      "\"): the overlap backends are \"auto\", \"nccl\" and \"symm_mem\"");
  return OverlapBackend::kAuto;
}

bool copy_engine_pays_off(const OverlapCall& call) {
  return call.rows_per_device >=
      (call.reduce_scatter ? kMinCopyEngineReduceScatterRows : kMinCopyEngineAllgatherRows);
}

bool use_copy_engine(
    OverlapBackend backend, const OverlapCall& call, const std::function<bool()>& peers_reachable) {
  if (!call.has_copy_engine_loop || !call.cuda || call.team_size <= 1) {
    return false;
  }
  switch (backend) {
    case OverlapBackend::kNccl:
      return false;
    case OverlapBackend::kSymmetricMemory:
      return true;
    case OverlapBackend::kAuto:
      return copy_engine_pays_off(call) && peers_reachable();
  }
  return false;
}

}  // namespace nvfuse
