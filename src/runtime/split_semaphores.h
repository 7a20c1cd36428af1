// The counters that the blocks of a split reduction arrive at
// (nvfuse::arrive_last, codegen/device_split_reduction.cuh). The last block of
// each group resets its counter to 0, so a buffer zeroed once serves every
// later launch: no zero fill (a second launch, half the time of a small
// split reduction) per call.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

namespace nvfuse {

class SplitSemaphores {
 public:
  // At least `count` zeroed counters for a launch on the current stream of
  // `device`. One buffer per (device, stream): launches on one stream run
  // in order, so each finds the counters its predecessor reset, while
  // launches on two streams may overlap and must not share counters. While
  // the stream is captured into a CUDA graph, a fresh zeroed tensor (the
  // graph owns its memory and replays its fill).
  at::Tensor for_launch(c10::Device device, int64_t count);

 private:
  std::mutex mutex_;
  std::map<std::pair<int, int64_t>, at::Tensor> buffers_;  // (device, stream id)
};

}  // namespace nvfuse
