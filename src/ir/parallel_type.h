// How an IterDomain is iterated: serially, by CUDA grid/block dimensions, by
// devices of a mesh (DIDx/y/z), or by CUDA streams. Devices and streams are
// just more parallel types, so sharding reuses split + parallelize.
#pragma once

#include <ostream>

namespace nvfuse {

#define NVFUSE_PARALLEL_TYPES(X) \
  X(Serial)                      \
  X(BIDx)                        \
  X(BIDy)                        \
  X(BIDz)                        \
  X(TIDx)                        \
  X(TIDy)                        \
  X(TIDz)                        \
  X(DIDx)                        \
  X(DIDy)                        \
  X(DIDz)                        \
  X(Stream)                      \
  X(Vectorize)                   \
  X(Unroll)

enum class ParallelType {
#define NVFUSE_PARALLEL_TYPE_ENUM(name) name,
  NVFUSE_PARALLEL_TYPES(NVFUSE_PARALLEL_TYPE_ENUM)
#undef NVFUSE_PARALLEL_TYPE_ENUM
};

const char* name_of(ParallelType type);
// The Python spelling: mesh_x/mesh_y/mesh_z for DIDx/y/z, stream for
// Stream, else name_of.
const char* python_name_of(ParallelType type);
std::ostream& operator<<(std::ostream& os, ParallelType type);

inline bool is_device_parallel(ParallelType t) {
  return t == ParallelType::DIDx || t == ParallelType::DIDy || t == ParallelType::DIDz;
}

// The mesh axis a DID type distributes over: DIDx -> 0, DIDy -> 1, DIDz -> 2.
int mesh_axis_of(ParallelType t);

}  // namespace nvfuse
