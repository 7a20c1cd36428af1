// The overlap backend: which loop a pipelined all-gather + GEMM or GEMM +
// reduce-scatter runs on one call, the c10d (NCCL) loop over row chunks or
// the copy-engine loop over source devices
// (runtime/host/symmetric_memory.h). The setting decides, and under "auto"
// (the default) so do the call's tensors and the team's GPUs. No torch
// here: the choice is tested without it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace nvfuse {

enum class OverlapBackend { kNccl, kSymmetricMemory, kAuto };
// NVFUSE_OVERLAP_BACKEND at first use ("auto" when unset, "nccl" or
// "symm_mem"), until set.
OverlapBackend overlap_backend();
void set_overlap_backend(OverlapBackend backend);
// The setting's name as the API spells it, and back (an unknown name is a
// DefinitionError listing the three).
const char* overlap_backend_name(OverlapBackend backend);
OverlapBackend overlap_backend_named(const std::string& name, const char* where);

// What the choice reads of one call.
struct OverlapCall {
  bool has_copy_engine_loop = false;  // the definition lowers to one
  bool cuda = false;                  // the loop's tensors are on GPUs
  int64_t team_size = 1;
  bool reduce_scatter = false;  // GEMM + reduce-scatter (else all-gather + GEMM)
  int64_t rows_per_device = 0;  // GEMM rows each device's loop step multiplies
};

// Under "auto", the fewest GEMM rows a device for which the copy engine
// is taken. The all-gather + GEMM's copy-engine loop hid 85-95% of the
// transfer and was 4-23% faster than the NCCL loop at every measured
// shape on 4 H200s, the thinnest with 1024 rows a device
// (4096x12288x6144); below that nothing was measured, and the copy
// engine's loop costs more host time a call (its symmetric-memory calls
// go through Python), so smaller GEMMs keep the NCCL loop. The GEMM +
// reduce-scatter's copy-engine loop was 1.41x faster than torch's fused op
// with 2048 rows a destination (8192x8192x8192) but 1.29x slower than the
// NCCL loop with 1024 (4096x12288x6144): thinner GEMMs no longer hide the
// pushes and the final sum of the slots.
inline constexpr int64_t kMinCopyEngineAllgatherRows = 1024;
inline constexpr int64_t kMinCopyEngineReduceScatterRows = 2048;

// Whether the measurements put the copy engine ahead for this call, peer
// access aside: enough rows a device for its kind (above).
bool copy_engine_pays_off(const OverlapCall& call);

// The loop this call runs: the copy engine under "symm_mem", never under
// "nccl", and under "auto" when it pays off and `peers_reachable()` (asked
// only then; a collective over the team, so every member must reach this
// choice with the same call) says every device of the team can read every
// other's memory. A team of one or CPU tensors always take the c10d loop.
bool use_copy_engine(
    OverlapBackend backend, const OverlapCall& call, const std::function<bool()>& peers_reachable);

}  // namespace nvfuse
