// replay_record for the multi-device annotations (fd.sched.* and the tensor
// methods set_device_mesh, split/outer_split and axis(i).parallelize): they
// change a tensor's mesh and loop domain, not the values it holds. Each is
// checked in full before it changes anything, so a rejected call leaves the
// definition as it was.
#include "frontend/replayer.h"
#include "ir/sharding.h"

namespace nvfuse {

namespace {

// `axis` of a loop domain of `rank` axes (negative counts from the end).
int64_t loop_axis(const TensorView& tv, int64_t axis, const char* what) {
  const int64_t rank = tv.loop_rank();
  NVFUSE_CHECK(axis >= -rank && axis < rank, what, ": axis ", axis, " is out of range for ",
      tv.name(), ", whose loop domain has ", rank, " axes");
  return axis < 0 ? axis + rank : axis;
}

}  // namespace

std::vector<StateValue> Replayer::schedule_op() {
  TensorView* tv = tensor(record_.positional(0), "the annotated tensor");
  switch (record_.kind) {
    case RecordKind::SetDeviceMesh: {
      const auto* mesh = std::get_if<DeviceMesh>(&record_.positional(1));
      NVFUSE_TYPE_CHECK(mesh != nullptr, "set_device_mesh takes a DeviceMesh");
      NVFUSE_CHECK(!mesh->empty(), "set_device_mesh: the mesh of ", tv->name(), " is empty");
      NVFUSE_CHECK(mesh->rank() <= 3, "set_device_mesh: ", tv->name(), " gets a ", mesh->rank(),
          "-D mesh, but meshes have at most 3 axes (mesh_x, mesh_y, mesh_z)");
      tv->set_device_mesh(*mesh);
      return {};
    }
    case RecordKind::SplitAxis: {
      const int64_t axis = loop_axis(*tv, std::get<int64_t>(record_.positional(1)), "split");
      const int64_t factor = std::get<int64_t>(record_.positional(2));
      NVFUSE_CHECK(factor > 0, "split: the factor of ", tv->name(), " axis ", axis,
          " must be positive, got ", factor);
      tv->split(axis, factor, record_.get<bool>("inner_split"));
      return {};
    }
    case RecordKind::ParallelizeAxis: {
      const int64_t axis = loop_axis(*tv, std::get<int64_t>(record_.positional(1)), "parallelize");
      const ParallelType type = std::get<ParallelType>(record_.positional(2));
      NVFUSE_CHECK(is_device_parallel(type) || type == ParallelType::Stream,
          "parallelize: ", tv->name(), " axis ", axis,
          " can be parallelized on "
          "ParallelType.mesh_x, mesh_y, mesh_z or stream from Python, not ",
          type);
      IterDomain* id = tv->axis(axis);
      const ParallelType before = id->parallel_type();
      id->parallelize(type);
      if (is_device_parallel(type) && tv->device_mesh().has_value()) {
        // With the mesh known, a DID axis that does not shard a logical axis
        // evenly by device count is an error here, where it was written.
        try {
          sharding_of(*tv);
        } catch (...) {
          id->parallelize(before);
          throw;
        }
      }
      return {};
    }
    default:
      NVFUSE_ASSERT(false, "not a schedule record: ", record_.method());
      return {};
  }
}

}  // namespace nvfuse
