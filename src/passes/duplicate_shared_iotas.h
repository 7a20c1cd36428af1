#pragma once

namespace nvfuse {

class Fusion;

// An iota read by several exprs gets a copy per reader. Kernels compute an
// iota from the element's position, so a copy costs nothing; one iota
// broadcast along two axes (a causal mask, iota[:, None] >= iota[None, :],
// as Thunder spells it) needs two axis maps, and kept the mask out of the
// softmax kernel that reads it.
void duplicate_shared_iotas(Fusion& fusion);

}  // namespace nvfuse
