// NVFUSE_DUMP=<comma list>: what to print at each stage of the pipeline.
#pragma once

#include <ostream>
#include <string>

namespace nvfuse {

#define NVFUSE_DUMP_OPTIONS(X) \
  X(fusion_ir)                 \
  X(preseg_ir)                 \
  X(segments)                  \
  X(params)                    \
  X(cuda_kernel)               \
  X(launch)                    \
  X(host_ir)                   \
  X(communication)             \
  X(python_definition)         \
  X(compile_time)              \
  X(host_time)

enum class DumpOption {
#define NVFUSE_DUMP_ENUM(name) name,
  NVFUSE_DUMP_OPTIONS(NVFUSE_DUMP_ENUM)
#undef NVFUSE_DUMP_ENUM
};

// Read once from the environment. An unknown name is reported on stderr with
// the valid ones, and otherwise ignored.
bool dump_enabled(DumpOption option);
// Writes `text` to dump_stream() under a header naming `what`.
void dump(const std::string& what, const std::string& text);
// Where dumps go: stderr, or this thread's capture while one is open.
std::ostream& dump_stream();
// execute(capture_debug_output=True): the dumps this thread writes between
// the two calls are collected and returned instead of printed.
void start_dump_capture();
std::string finish_dump_capture();

}  // namespace nvfuse
