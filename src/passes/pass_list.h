#pragma once

namespace nvfuse {

class Fusion;

// Runs the pre-segmentation passes, in the one order listed in
// pass_list.cpp, on a fusion the runtime owns (a clone of the user's).
// With NVFUSE_DUMP=preseg_ir the IR is printed after each pass that runs.
void run_presegmentation_passes(Fusion& fusion);

// Runs the passes of a sharded fusion, in the order listed in
// pass_list.cpp: sharding propagation (every tensor gets a mesh and its
// DID axes from its neighbours), then the rewrite of variances over
// sharded axes into sums that collectives can combine. The multi-device
// executor runs them before it lowers reshardings to communications.
void run_sharding_passes(Fusion& fusion);

}  // namespace nvfuse
