// The CUDA driver API, loaded at run time (libcuda.so.1). Every call's result
// is checked; a failure names the call and the driver's error string.
#pragma once

#include <cstdint>
#include <string>

namespace nvfuse::cuda_driver {

struct DeviceProperties {
  int sm_count = 0;
  int arch = 0;  // compute capability as major * 10 + minor, e.g. 90
  int l2_bytes = 0;
};

// Cached per device after the first query.
const DeviceProperties& properties(int device);

// Makes the device's primary context (the one torch uses) current on this
// thread.
void make_context_current(int device);

// Loads a cubin or PTX image into the current context.
void* load_module(const std::string& image);
void* get_function(void* module, const std::string& name);

struct FunctionResources {
  int registers = 0;
  int local_bytes = 0;  // > 0 means register spills or stack arrays
};
FunctionResources resources_of(void* function);

// Lets `function` take up to `bytes` of dynamic shared memory (beyond the
// default 48 KB).
void allow_dynamic_shared_bytes(void* function, int bytes);
// Lets `function` launch in clusters above the portable 8 blocks (sm_90
// and later; H100 holds 16). Set once when the kernel is loaded, so the
// launch path makes no extra driver call.
void allow_non_portable_clusters(void* function);
// Blocks of `block_size` threads with `shared_bytes` of dynamic shared
// memory that fit on one SM at once.
int max_active_blocks_per_sm(void* function, int block_size, size_t shared_bytes);
// Clusters of `cluster_x` such blocks that the device runs at once (fewer
// than the SMs' blocks over cluster_x where a cluster must fit in one GPC).
int max_active_clusters(void* function, unsigned cluster_x, int block_size, unsigned shared_bytes);

// True while `stream` is being captured into a CUDA graph (needs a current
// context: runtime/stream_capture.h makes one current first).
bool is_capturing(void* stream);

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

// Launches `function` with one by-value parameter block (`params` as
// cuLaunchKernel expects: an array of pointers to each argument); in
// clusters of `cluster_x` blocks along x when above 1 (sm_90 and later;
// grid.x a multiple of it; above 8 after allow_non_portable_clusters); as
// a programmatic dependent of the stream's previous kernel when
// `programmatic` (sm_90 and later: cuLaunchKernelEx's programmatic stream
// serialization).
void launch(void* function, Dim3 grid, Dim3 block, unsigned shared_bytes, void* stream,
    void** params, unsigned cluster_x = 1, bool programmatic = false);

}  // namespace nvfuse::cuda_driver
