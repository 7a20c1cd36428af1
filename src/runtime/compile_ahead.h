// Compiling ahead: a fusion of several kernels compiles them all at once on
// the call that first needs them, rather than one after another as the
// call reaches each. The call runs twice: a first pass in which a kernel
// that is not compiled yet starts compiling on a thread of its own while
// its segment runs on the ATen reference evaluator (the tiered path; its
// results are dropped), then the real pass, which waits for each kernel in
// turn, by then compiling alongside the others. A pass that found every
// kernel compiled is the call's result: a cached call pays one thread-local
// flag. On by default; NVFUSE_COMPILE_AHEAD=0 or set_compile_ahead(false)
// turns it off.
#pragma once

#include <cstddef>

namespace nvfuse {

class Fusion;

// While one is alive on a thread, a launch on that thread whose kernel is
// not compiled yet starts the compile in the background and is declined
// (kernel_pending.h); deferred() counts those launches.
class CompileAheadScope {
 public:
  CompileAheadScope();
  ~CompileAheadScope();
  CompileAheadScope(const CompileAheadScope&) = delete;
  CompileAheadScope& operator=(const CompileAheadScope&) = delete;

  size_t deferred() const;

 private:
  bool outer_alive_;
  size_t outer_deferred_;
};

// Whether a CompileAheadScope is alive on this thread, and counting a
// launch it deferred.
bool compiling_ahead();
void note_compiled_ahead();

// Whether a fusion may run the first pass: it must not change state that a
// second run would change again, i.e. write an input in place or draw from
// torch's random generator (the second pass would draw other numbers than
// one call of eager torch does).
bool may_compile_ahead(const Fusion& fusion);

void set_compile_ahead(bool on);
bool compile_ahead();

}  // namespace nvfuse
