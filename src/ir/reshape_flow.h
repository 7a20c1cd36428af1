// The axis flow of a reshape, seed 003's "split and merge of sharded dims
// handled by hand". The input and output axes are cut into groups of equal
// element count ([B, S, 3E] -> [B, S, H, 3E/H] gives {B}{B}, {S}{S},
// {3E}{H, 3E/H}). Within a group, rows of the leading (first non-1) input
// axis are contiguous runs of the group's elements, and so are rows of the
// leading output axis: sharding one over D devices is sharding the other,
// when D divides both extents. Every other axis of a group with more than
// one axis on a side must be whole. Groups are found through constant
// extents and extents that are the same Scalar; past the first group that
// cannot be matched so (symbolic sizes that differ), every input axis is
// needed whole: correct, through an Allgather, if not fast.
#pragma once

#include "ir/axis_flow.h"

namespace nvfuse {

AxisFlow reshape_flow(const TensorView& in, const TensorView& out);

}  // namespace nvfuse
