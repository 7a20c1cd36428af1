// NVFUSE_DUMP=<comma list>: what to print at each stage of the pipeline.
#pragma once

#include <functional>
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
  X(recompile)                 \
  X(host_time)                 \
  X(dynamo) /* read by the torch.compile backend (Python) */

enum class DumpOption {
#define NVFUSE_DUMP_ENUM(name) name,
  NVFUSE_DUMP_OPTIONS(NVFUSE_DUMP_ENUM)
#undef NVFUSE_DUMP_ENUM
};

// From NVFUSE_DUMP at the first query, until set_dump_options. An unknown
// name in the environment is reported on stderr with the valid ones, and
// otherwise ignored.
bool dump_enabled(DumpOption option);
// Replaces what is dumped: a comma list of option names ("" for none).
// An unknown name raises a DefinitionError naming the valid ones.
void set_dump_options(const std::string& list);
// The options dumped now, as a comma list.
std::string dump_options();
// Writes `text` to dump_stream() under a header naming `what`.
void dump(const std::string& what, const std::string& text);
// Where dumps go: this thread's capture while one is open, else the sink
// (each flush of the stream hands the sink what was written since), else
// stderr.
std::ostream& dump_stream();
// Where dumps go when no capture is open (nullptr: stderr). The Python
// module installs one that hands them to Python's logging.
void set_dump_sink(std::function<void(const std::string&)> sink);
// execute(capture_debug_output=True): the dumps this thread writes between
// the two calls are collected and returned instead of printed.
void start_dump_capture();
std::string finish_dump_capture();

}  // namespace nvfuse
