// Turns a compute segment of a sharded fusion into the plain fusion one
// process runs on its local shards: each sharded axis takes the local
// extent (a constant N over D devices becomes N/D, a whole-axis DID axis 1,
// a symbolic extent a new symbolic extent bound from the local tensors),
// then meshes and loop transforms are dropped, so the schedulers and the
// reference evaluator see an ordinary fusion of local sizes.
#pragma once

#include "ir/fusion.h"

namespace nvfuse {

// Throws a DefinitionError naming the tensor for a constant extent that
// its devices do not divide.
void localize(Fusion& segment);

}  // namespace nvfuse
