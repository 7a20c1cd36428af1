#pragma once

namespace nvfuse {

class Fusion;

// Runs the pre-segmentation passes, in the one order listed in
// pass_list.cpp, on a fusion the runtime owns (a clone of the user's).
// With NVFUSE_DUMP=preseg_ir the IR is printed after each pass that runs.
void run_presegmentation_passes(Fusion& fusion);

}  // namespace nvfuse
