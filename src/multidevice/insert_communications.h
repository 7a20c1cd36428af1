// Decomposes every resharding expr so that each communication is an expr of
// its own: a `set` whose input and output differ only in their
// distribution. The expr it served then runs on local data with no
// resharding left, so the fusion can be cut into compute segments and
// communications (host steps).
//
//  - Gathers, scatters and moves (Allgather, AllToAll, Scatter, Broadcast,
//    Gather, SendRecv) insert T' = set(T) before the expr, T' distributed
//    as the expr needs its input; several on one input chain.
//  - Reductions over a sharded axis (Allreduce, ReduceScatter, Reduce)
//    leave the expr's output O as the partial result on each device (O
//    loses that mesh axis; for a Reduce it moves to the input's mesh) and
//    insert O' = set(O), distributed as O was, for every use of O.
//  - An input axis that is whole where the expr's output is sharded gets
//    a local slice: T' = set(T) sharded like the output, which moves no
//    data (each device keeps its part).
#pragma once

#include <vector>

#include "multidevice/communication.h"

namespace nvfuse {

struct HostSteps {
  // In program order; each `expr` is an inserted set, `tensor` its input.
  std::vector<Communication> communications;
  // Inserted sets that keep this device's slice of a whole tensor.
  std::vector<const Expr*> local_slices;
};

// `fusion` must have gone through propagate_shardings.
HostSteps insert_communications(Fusion& fusion);

}  // namespace nvfuse
