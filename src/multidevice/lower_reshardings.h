// Lowering of resharding exprs to communications. After sharding
// propagation every tensor has a mesh; an expr is resharding when its
// inputs' distribution does not give its output's:
//  - an input axis sharded over mesh axis m flows into an output axis that
//    is not, or the expr needs it whole (a slice's cut axis, attention's key
//    length, a reshape's inner axis): an Allgather of the input over m
//    before the expr (an AllToAll when the output is sharded over m along an
//    axis another input axis feeds);
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

#include "ir/axis_flow.h"
#include "ir/sharding.h"
#include "multidevice/communication.h"

namespace nvfuse {

// The communications of `fusion`, in program order. Throws UnsupportedError
// naming the expr for a resharding not lowered yet: a sharded axis through
// an expr sharding does not follow (indexing, gathers, scans), a sharded
// reduction into several outputs (a complex
// var_mean; real ones are split into sums first), an output sharded along an
// axis computed from whole ones, outputs of one expr sharded unlike each
// other, meshes that differ in more than one device.
std::vector<Communication> lower_reshardings(const Fusion& fusion);

// How an expr reads input `in_tv` (distributed as `read` once gathered)
// for an output `out_tv` distributed as `out`: output axes sharded where
// the input is whole are read as local slices of the input axis feeding
// them, so the expr sees local extents only.
Sharding with_local_slices(const AxisFlow& flow, const TensorView& in_tv, Sharding read,
    const TensorView& out_tv, const Sharding& out);

}  // namespace nvfuse
