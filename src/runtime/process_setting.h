// A process-wide value that tuning runs may change while kernels launch on
// other threads (the schedulers' launch-shape defaults).
#pragma once

#include <mutex>

namespace nvfuse {

template <typename T>
class ProcessSetting {
 public:
  T get() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return value_;
  }
  void set(const T& value) {
    std::lock_guard<std::mutex> lock(mutex_);
    value_ = value;
  }

 private:
  mutable std::mutex mutex_;
  T value_{};
};

}  // namespace nvfuse
