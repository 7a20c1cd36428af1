// NVFUSE_DUMP=host_time: wall-clock time of each step of the host path of
// execute (argument conversion, input binding, output allocation,
// scheduling, kernel lookup, packing and launch...), summed over calls and
// printed at process exit as a per-call mean. The steps nest: a step's time
// includes the steps inside it. When the option is off a timer costs one
// load of a flag.
#pragma once

#include <chrono>
#include <string>

namespace nvfuse {

bool host_timing_enabled();

// The per-step table of the calls timed so far (empty when none were), and
// clears the totals: what the process prints at exit, taken early by a
// tool that times some calls of a run only.
std::string take_host_times();

class HostStepTimer {
 public:
  // `step` must outlive the process (a string literal).
  explicit HostStepTimer(const char* step) : step_(host_timing_enabled() ? step : nullptr) {
    if (step_ != nullptr) {
      start_ = std::chrono::steady_clock::now();
    }
  }
  ~HostStepTimer();
  HostStepTimer(const HostStepTimer&) = delete;
  HostStepTimer& operator=(const HostStepTimer&) = delete;

 private:
  const char* step_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace nvfuse
