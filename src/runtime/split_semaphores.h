// The counters that the blocks of a split reduction arrive at
// (nvfuse::arrive_last, codegen/device_split_reduction.cuh), and the
// workspace their partial results go to. The last block of each group
// resets its counter to 0, so a buffer zeroed once serves every later
// launch: no zero fill (a second launch, half the time of a small split
// reduction) per call.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <utility>

namespace nvfuse {

// The partial results of a split reduction's blocks, for a launch of
// `bytes` on the current stream of `device`: one growing buffer per
// (device, stream) shared by every split reduction kernel of the process,
// since each launch writes its partials before it reads them and launches
// on one stream run in order (not for partials that a second launch reads:
// another thread's launch could come between). An allocation per launch
// cost the host about 6 us, and a ResNet-50 training step makes about a
// hundred such launches. While the stream is captured into a CUDA graph,
// or for more than 16 MiB, a fresh tensor: the graph owns its memory, and
// a large buffer kept would hold memory others could use.
at::Tensor split_workspace_for_launch(c10::Device device, int64_t bytes);

// One growing buffer per (device, stream), for launches on that stream:
// they run in order, so each launch may use what its predecessor left,
// while launches on two streams may overlap and must not share one.
class StreamBuffers {
 public:
  // At least `count` elements of `dtype` (zeroed when first made, if
  // `zeroed`) for a launch on the current stream of `device`. While the
  // stream is captured into a CUDA graph, or for more than `largest_kept`
  // elements, a fresh tensor.
  at::Tensor for_launch(c10::Device device, int64_t count, at::ScalarType dtype, bool zeroed,
      int64_t largest_kept = std::numeric_limits<int64_t>::max());

 private:
  std::mutex mutex_;
  std::map<std::pair<int, int64_t>, at::Tensor> buffers_;  // (device, stream id)
};

class SplitSemaphores {
 public:
  // At least `count` zeroed counters for a launch on the current stream of
  // `device` (StreamBuffers): each launch finds the counters its
  // predecessor reset. While the stream is captured into a CUDA graph, a
  // fresh zeroed tensor (the graph owns its memory and replays its fill).
  at::Tensor for_launch(c10::Device device, int64_t count) {
    return buffers_.for_launch(device, count, at::kInt, /*zeroed=*/true);
  }

 private:
  StreamBuffers buffers_;
};

}  // namespace nvfuse
