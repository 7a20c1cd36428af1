// What part of a sharded tensor one device holds (seed 000): the tensor a
// process passes to or gets from execute is its local shard, of the same
// rank as the logical domain, each sharded axis holding the local extent.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ir/sharding.h"

namespace nvfuse {

// The local extents of a tensor of global extents `global`: a sharded axis
// split by its mesh axis's device count (1 where the logical axis itself
// is on the mesh axis, whose extent must then be that count). An uneven
// split is an InputError naming `tensor`.
std::vector<int64_t> local_sizes(
    const Sharding& sharding, const std::vector<int64_t>& global, const std::string& tensor);

// The global extents of a tensor whose local shard has extents `local`.
std::vector<int64_t> global_sizes(const Sharding& sharding, const std::vector<int64_t>& local);

// The [begin, end) of logical axis `axis` that `device` holds, for a
// tensor of global extents `global` (the whole axis when it is not
// sharded). `device` must be in the mesh.
std::pair<int64_t, int64_t> local_range(
    const Sharding& sharding, int64_t device, int64_t axis, const std::vector<int64_t>& global);

}  // namespace nvfuse
