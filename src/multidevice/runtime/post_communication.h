// Runs one communication of the host program for this process through its
// team's c10d process group, on the current stream (NCCL work is ordered
// after what the stream already holds; Gloo work completes before return).
#pragma once

#include <ATen/core/Tensor.h>

#include "multidevice/communication.h"
#include "multidevice/runtime/communicator.h"

namespace nvfuse {

struct CommunicationSite {
  int64_t device;               // this process's rank
  c10::Device tensor_device;    // where a received buffer is allocated
  at::ScalarType dtype;         // the communicated tensor's element type
  int64_t rank;                 // the communicated tensor's rank
};

// `input`: this device's value of comm.tensor (undefined where it holds
// none). Returns its value of the communicated result: the gathered,
// reduced, scattered or received tensor, or undefined where this device
// gets none. A device outside every team returns at once.
at::Tensor post_communication(
    const Communication& comm,
    const at::Tensor& input,
    const CommunicationSite& site,
    Communicator& communicator);

}  // namespace nvfuse
