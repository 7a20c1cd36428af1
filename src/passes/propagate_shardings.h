// Sharding propagation: tensors without a device mesh take one from their
// neighbours, so that a user annotates a few tensors (typically the inputs
// and weights) and every other tensor gets a mesh and DID-parallel axes.
//
// Forward, producers first: an expr's unannotated outputs follow one
// reference input (for linear and matmul the second operand when it is
// sharded, as a weight's sharding decides column- vs row-parallel; else the
// input with the most sharded axes), each sharded axis carried to the
// output axis it becomes (ir/axis_flow.h) unless the expr needs it
// whole or a reshape's devices do not divide it. A summed sharded axis (a row-parallel linear's K,
// a sum over a sharded axis) leaves the output unsharded there: the lowering then combines the
// partial results with an Allreduce. Backward, consumers first: unannotated fusion inputs take the
// sharding of a consumer's output through the same flow, and a contraction partner's sharding of
// the summed axis (x's K from a row-parallel weight's K).
#pragma once

#include "ir/fusion.h"

namespace nvfuse {

// True when some tensor of `fusion` has a device mesh.
bool has_device_mesh(const Fusion& fusion);

void propagate_shardings(Fusion& fusion);

}  // namespace nvfuse
