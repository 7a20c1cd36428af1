// Lowering of resharding exprs to communications. After sharding
// propagation every tensor has a mesh; an expr is resharding when its
// inputs' distribution does not give its output's:
//  - an input axis sharded over mesh axis m flows into an output axis that
//    is not: an Allgather of the input over m before the expr (an AllToAll
//    when the output is sharded over m along another axis);
//  - a summed input axis (a reduction or contraction) sharded over m: the
//    expr runs on the local shards to a partial result, then an Allreduce
//    over m combines it (a ReduceScatter when the output is sharded over m
//    along another axis; Reduce to a root when the output's mesh is that
//    one device);
//  - input and output on different meshes: Broadcast or Scatter from a
//    one-device mesh, Gather onto one, SendRecv between two single devices.
// An output axis sharded where its input is whole needs no communication:
// each device computes only its slice.
#pragma once

#include <vector>

#include "multidevice/communication.h"

namespace nvfuse {

// The communications of `fusion`, in program order. Throws UnsupportedError
// naming the expr for a resharding not lowered yet (a sharded axis through
// a reshape or var_mean, meshes that differ in more than one device).
std::vector<Communication> lower_reshardings(const Fusion& fusion);

}  // namespace nvfuse
