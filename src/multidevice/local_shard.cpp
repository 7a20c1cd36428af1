#include "multidevice/local_shard.h"

#include "ir/errors.h"

namespace nvfuse {

std::vector<int64_t> local_sizes(
    const Sharding& sharding, const std::vector<int64_t>& global, const std::string& tensor) {
  std::vector<int64_t> local = global;
  for (size_t a = 0; a < global.size(); ++a) {
    const int m = sharding.mesh_axis[a];
    if (m < 0) {
      continue;
    }
    const int64_t parts = sharding.mesh->size(m);
    if (sharding.whole_axis[a]) {
      NVFUSE_INPUT_CHECK(global[a] == parts, tensor, ": axis ", a, " is on mesh axis ", m,
          " itself, so its extent must be the ", parts, " devices of that axis, not ", global[a]);
      local[a] = 1;
      continue;
    }
    NVFUSE_INPUT_CHECK(global[a] % parts == 0, tensor, ": axis ", a, " of extent ", global[a],
        " does not split evenly over the ", parts, " devices of mesh axis ", m,
        " (uneven splits are not supported)");
    local[a] = global[a] / parts;
  }
  return local;
}

std::vector<int64_t> global_sizes(const Sharding& sharding, const std::vector<int64_t>& local) {
  std::vector<int64_t> global = local;
  for (size_t a = 0; a < local.size(); ++a) {
    const int m = sharding.mesh_axis[a];
    if (m >= 0) {
      global[a] = local[a] * sharding.mesh->size(m);
    }
  }
  return global;
}

std::pair<int64_t, int64_t> local_range(
    const Sharding& sharding, int64_t device, int64_t axis, const std::vector<int64_t>& global) {
  const int m = sharding.mesh_axis[axis];
  if (m < 0) {
    return {0, global[axis]};
  }
  const auto coords = sharding.mesh->coordinates_of(device);
  NVFUSE_ASSERT(coords.has_value(), "device ", device, " is not in ", *sharding.mesh);
  const int64_t extent = local_sizes(sharding, global, "the tensor")[axis];
  const int64_t begin = (*coords)[m] * extent;
  return {begin, begin + extent};
}

}  // namespace nvfuse
