// How a tensor is distributed over its device mesh, read from (and written
// to) its loop domain. Logical axis a is sharded over mesh axis m when a
// DIDx/DIDy/DIDz loop IterDomain (mesh axis 0/1/2) is either a itself (the
// local extent is then 1) or the outer part of an outer split of a into as
// many parts as mesh axis m has devices. The logical domain stays global;
// the local shard of a process has each sharded axis divided by its parts.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/tensor_view.h"

namespace nvfuse {

struct Sharding {
  std::optional<DeviceMesh> mesh;
  // Per logical axis: the mesh axis it is sharded over, or -1 (every device
  // of the mesh holds all of it).
  std::vector<int> mesh_axis;
  // Per logical axis: true when the DID IterDomain is the logical axis
  // itself rather than the outer part of a split.
  std::vector<bool> whole_axis;

  bool is_sharded() const;
  // The logical axis sharded over `mesh_axis`, or -1.
  int logical_axis_on(int mesh_axis) const;
  bool operator==(const Sharding& other) const {
    return mesh == other.mesh && mesh_axis == other.mesh_axis;
  }
  bool operator!=(const Sharding& other) const { return !(*this == other); }
  // "mesh [2, 4] {0..7}, axis 0 on DIDx" or "replicated on ..." / "no mesh".
  std::string to_string() const;
};

// The sharding of `tv`. Throws a DefinitionError for a DID-parallel loop
// axis that is neither a logical axis nor the outer part of an outer split
// of one by the mesh axis's size, for two axes on one mesh axis, and for a
// DID axis without a mesh.
Sharding sharding_of(const TensorView& tv);

// Gives `tv` (with no loop transforms yet) `sharding`: its mesh, and for
// each sharded logical axis an outer split by the mesh axis's size whose
// outer part is parallelized on that mesh axis.
void apply_sharding(TensorView* tv, const Sharding& sharding);

// Drops `tv`'s sharding: no mesh, and the logical domain as its loop
// domain, serial.
void clear_sharding(TensorView* tv);

// The DID type of mesh axis `axis`: 0 -> DIDx, 1 -> DIDy, 2 -> DIDz.
ParallelType did_of_mesh_axis(int axis);

}  // namespace nvfuse
