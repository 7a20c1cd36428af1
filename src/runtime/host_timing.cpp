#include "runtime/host_timing.h"

#include <cstdint>
#include <iomanip>
#include <map>
#include <mutex>
#include <sstream>
#include <string>

#include "ir/dump.h"

namespace nvfuse {

namespace {

struct StepTotals {
  int64_t calls = 0;
  int64_t nanoseconds = 0;
};

// The totals per step; printed when the process exits.
class HostTimes {
 public:
  void add(const char* step, int64_t nanoseconds) {
    std::lock_guard<std::mutex> lock(mutex_);
    StepTotals& totals = steps_[step];  // keyed by the literal's address
    ++totals.calls;
    totals.nanoseconds += nanoseconds;
  }

  ~HostTimes() {
    const std::string table = take();
    if (!table.empty()) {
      dump("host_time", table);
    }
  }

  std::string take() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (steps_.empty()) {
      return "";
    }
    std::ostringstream ss;
    ss << std::left << std::setw(36) << "step" << std::right << std::setw(10) << "calls"
       << std::setw(12) << "us/call"
       << "\n";                                 // per timed use (a segment's, for steps inside one)
    std::map<std::string, StepTotals> by_name;  // two sites may share a name
    for (const auto& [step, totals] : steps_) {
      by_name[step].calls += totals.calls;
      by_name[step].nanoseconds += totals.nanoseconds;
    }
    for (const auto& [step, totals] : by_name) {
      ss << std::left << std::setw(36) << step << std::right << std::setw(10) << totals.calls
         << std::setw(12) << std::fixed << std::setprecision(2)
         << static_cast<double>(totals.nanoseconds) / 1e3 / static_cast<double>(totals.calls)
         << "\n";
    }
    steps_.clear();
    return ss.str();
  }

 private:
  std::mutex mutex_;
  std::map<const char*, StepTotals> steps_;
};

HostTimes& host_times() {
  static HostTimes times;
  return times;
}

}  // namespace

bool host_timing_enabled() { return dump_enabled(DumpOption::host_time); }

std::string take_host_times() { return host_times().take(); }

HostStepTimer::~HostStepTimer() {
  if (step_ != nullptr) {
    const auto elapsed = std::chrono::steady_clock::now() - start_;
    host_times().add(step_, std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count());
  }
}

}  // namespace nvfuse
