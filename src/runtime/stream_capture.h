#pragma once

#include <c10/core/Device.h>

namespace nvfuse {

// True while torch's current stream of the CUDA `device` is being captured
// into a CUDA graph. Makes the device's primary context current first: the
// driver's query needs one, and a thread that has not touched CUDA through
// the runtime yet (the autograd engine's device thread, running a backward)
// has none.
bool current_stream_is_capturing(c10::Device device);

}  // namespace nvfuse
