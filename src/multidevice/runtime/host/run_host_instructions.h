// Runs a pipelined host program (host_instructions.h) in this process.
#pragma once

#include <c10/core/Event.h>
#include <c10/core/Stream.h>

#include <optional>
#include <string>
#include <vector>

#include "multidevice/runtime/host/host_instructions.h"
#include "multidevice/runtime/post_communication.h"

namespace nvfuse {

struct HostFrame {
  std::vector<at::Tensor> slots;
  const Team* team = nullptr;
  int64_t member = 0;  // this device's position in the team
  std::string group;   // the team's c10d group name (teams of 2 or more)
  int64_t chunks = 1;
  int64_t index = 0;  // the loop's chunk
  // CUDA tensors: stream 0 is the caller's, then the workers; on the CPU
  // the stream instructions do nothing.
  bool on_cuda = false;
  std::vector<c10::Stream> streams;
  std::vector<CommunicationWork> works;
  std::vector<std::optional<c10::Event>> events;  // per chunk
};

// Fills in the chunk count and the streams, then runs the program. The
// caller has put the program's inputs in their slots; the result is in
// slot `program.result` when it returns (still being computed on the
// GPU, ordered before later work on the caller's stream).
void run_host_loop_program(const HostLoopProgram& program, HostFrame& frame);

}  // namespace nvfuse
