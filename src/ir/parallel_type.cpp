#include "ir/parallel_type.h"

#include "ir/errors.h"

namespace nvfuse {

const char* name_of(ParallelType type) {
  switch (type) {
#define NVFUSE_PARALLEL_TYPE_NAME(name) \
  case ParallelType::name:              \
    return #name;
    NVFUSE_PARALLEL_TYPES(NVFUSE_PARALLEL_TYPE_NAME)
#undef NVFUSE_PARALLEL_TYPE_NAME
  }
  return "<unknown ParallelType>";
}

const char* python_name_of(ParallelType type) {
  switch (type) {
    case ParallelType::DIDx:
      return "mesh_x";
    case ParallelType::DIDy:
      return "mesh_y";
    case ParallelType::DIDz:
      return "mesh_z";
    case ParallelType::Stream:
      return "stream";
    default:
      return name_of(type);
  }
}

std::ostream& operator<<(std::ostream& os, ParallelType type) { return os << name_of(type); }

int mesh_axis_of(ParallelType t) {
  switch (t) {
    case ParallelType::DIDx:
      return 0;
    case ParallelType::DIDy:
      return 1;
    case ParallelType::DIDz:
      return 2;
    default:
      NVFUSE_ASSERT(false, t, " is not a device parallel type");
  }
  return -1;
}

}  // namespace nvfuse
