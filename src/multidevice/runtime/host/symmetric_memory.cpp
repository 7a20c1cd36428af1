#include "multidevice/runtime/host/symmetric_memory.h"

namespace nvfuse {

namespace {

SymmetricMemoryHooks& hooks() {
  static SymmetricMemoryHooks instance;
  return instance;
}

}  // namespace

void set_symmetric_memory_hooks(SymmetricMemoryHooks h) { hooks() = std::move(h); }

const SymmetricMemoryHooks& symmetric_memory_hooks() { return hooks(); }

}  // namespace nvfuse
