// The last few calls' schedules of a generated-kernel executor, one reused
// while a call looks the same to the heuristics as the call that made it:
// its tensors' dtypes, sizes, strides and addresses mod 128 (all that the
// vector widths check), and the other numbers the heuristics read (device,
// tuning, sizes computed from scalars...). Scheduling took ~1.5 us of a
// ~15 us cached call on the H100 VM (NVFUSE_DUMP=host_time); a training
// loop's calls repeat.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "runtime/host_timing.h"
#include "schedule/tensor_arg.h"

namespace nvfuse {

template <typename Schedule>
class ScheduleMemo {
 public:
  // A kept schedule, shared with the calls it serves (nullptr: the
  // heuristics declined those tensors). Copying one out per call copied
  // its vectors (a reduction space's strides per tensor) every launch.
  using Shared = std::shared_ptr<const Schedule>;

  // compute(): the schedule when none of the kept ones applies, as a
  // Schedule or as an std::optional<Schedule> (nullopt: declined).
  template <typename Compute>
  Shared get(
      const std::vector<TensorArg>& tensors, std::vector<int64_t> numbers, Compute&& compute) {
    {
      std::lock_guard<std::mutex> lock(mutex_);  // calls may come from threads
      for (auto it = kept_.begin(); it != kept_.end(); ++it) {
        if (it->numbers == numbers && same(it->tensors, tensors)) {
          std::rotate(kept_.begin(), it, it + 1);  // most recent first
          return kept_.front().schedule;
        }
      }
    }
    const HostStepTimer step("07m schedule computed (no kept one applied)");
    Shared schedule = shared(compute());
    std::lock_guard<std::mutex> lock(mutex_);
    kept_.insert(kept_.begin(), Entry{tensors, std::move(numbers), schedule});
    if (kept_.size() > kKept) {
      kept_.pop_back();
    }
    return schedule;
  }

 private:
  // One fusion definition often serves calls of a few shapes in turn (a
  // network's blocks at each of its widths, a forward's and a backward's
  // batch-norm with the same definition): each keeps its schedule.
  static constexpr size_t kKept = 4;

  struct Entry {
    std::vector<TensorArg> tensors;
    std::vector<int64_t> numbers;
    Shared schedule;
  };

  static Shared shared(Schedule schedule) {
    return std::make_shared<const Schedule>(std::move(schedule));
  }
  static Shared shared(std::optional<Schedule> schedule) {
    return schedule.has_value() ? shared(std::move(*schedule)) : nullptr;
  }

  static bool same(const std::vector<TensorArg>& a, const std::vector<TensorArg>& b) {
    if (a.size() != b.size()) {
      return false;
    }
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i].dtype != b[i].dtype || a[i].sizes != b[i].sizes || a[i].strides != b[i].strides ||
          a[i].address % 128 != b[i].address % 128) {
        return false;
      }
    }
    return true;
  }

  std::mutex mutex_;
  std::vector<Entry> kept_;
};

}  // namespace nvfuse
