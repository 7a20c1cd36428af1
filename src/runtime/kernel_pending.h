// Tiered compilation's signal from a kernel executor to the segment that
// ran it (runtime/kernel_variants.h, FusionExecutor::run_segment): the
// launch was declined because its kernel is still compiling, so the segment
// runs on the ATen reference evaluator this time rather than on the fusion's
// other kernels (which a decline for these inputs' shapes would pick).
#pragma once

namespace nvfuse {

// Set by the executor's launch on this thread; take_ reads and clears it.
void note_kernel_pending();
bool take_kernel_pending();

// Whether a launch on `device` may run without its kernel while it
// compiles: tiered compilation is on (set_tiered_compile) or a first pass
// compiles ahead (compile_ahead.h), and torch's
// current stream of the device is not being captured into a CUDA graph,
// which records launches and would keep the reference path's work in the
// graph for good.
bool may_defer_compile(int device);

}  // namespace nvfuse
