#pragma once

namespace nvfuse {

class Fusion;

// sum/prod/max/min over axes of size 1 -> squeeze (the value itself).
// Clients spell such reductions (Thunder's layer-norm backward sums a
// [N, 1] tensor over its last axis); as a reduction each one is a second
// phase over a broadcast axis, which the reduction scheduler takes for a
// sum of a sum and cuts out as a segment of its own.
void squeeze_trivial_reductions(Fusion& fusion);

}  // namespace nvfuse
