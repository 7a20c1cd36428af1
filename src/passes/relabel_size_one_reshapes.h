#pragma once

namespace nvfuse {

class Fusion;

// A reshape that only drops size-1 axes -> squeeze; one that only adds them
// -> broadcast. Clients spell squeezes as reshapes (Thunder's cross-entropy
// reshapes its [N, 1] gathered logits to [N]); a reshape is a view that the
// reduction and pointwise kernels do not take, a squeeze or broadcast a
// relabeling they do.
void relabel_size_one_reshapes(Fusion& fusion);

}  // namespace nvfuse
