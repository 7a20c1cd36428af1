#include "schedule/coordinate_params.h"

#include "ir/data_type.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <sstream>

namespace nvfuse {

namespace {

// ", dense=[0, 3]" for bits 0 and 3; nothing without.
std::string dense_text(uint64_t bits) {
  std::string text;
  for (int t = 0; t < 64; ++t) {
    if (bits >> t & 1) {
      text += (text.empty() ? ", dense=[" : ", ") + std::to_string(t);
    }
  }
  return text.empty() ? text : text + "]";
}

}  // namespace

std::string CoordinateParams::to_string() const {
  std::ostringstream ss;
  ss << "CoordinateParams(rank=" << rank << ", vector_width=" << vector_width
     << ", block=" << block_size << ", unroll=" << unroll
     << ", index=" << (index_32bit ? "int32" : "int64") << (vectors_aligned ? ", aligned" : "")
     << dense_text(dense_tensors)
     << (scan_axis >= 0 ? ", scan_axis=" + std::to_string(scan_axis) : "")
     << (scatter_rows ? ", scatter_rows" : "") << (flat_lanes ? ", flat_lanes" : "")
     << (graph_rng ? ", graph_rng" : "") << ")";
  return ss.str();
}

bool CoordinateParams::operator==(const CoordinateParams& other) const {
  return rank == other.rank && vector_width == other.vector_width &&
      block_size == other.block_size && unroll == other.unroll &&
      index_32bit == other.index_32bit && vectors_aligned == other.vectors_aligned &&
      dense_tensors == other.dense_tensors && scan_axis == other.scan_axis &&
      scatter_rows == other.scatter_rows && flat_lanes == other.flat_lanes &&
      graph_rng == other.graph_rng;
}

void schedule_scan(
    CoordinateSchedule& schedule, const std::vector<int64_t>& extents, int scan_axis) {
  CoordinateParams& p = schedule.params;
  p.scan_axis = scan_axis;
  p.unroll = 1;
  p.block_size = std::max(32, p.block_size / 32 * 32);  // whole warps
  if (schedule.numel == 0) {
    schedule.grid_size = 0;
    return;
  }
  const int64_t walked = extents[scan_axis];
  const bool warp_per_row = scan_axis + 1 == static_cast<int>(extents.size());
  const int64_t per_block = warp_per_row ? p.block_size / 32 : p.block_size;
  const int64_t units =
      warp_per_row ? schedule.numel / walked : schedule.numel / walked / p.vector_width;
  schedule.grid_size = (units + per_block - 1) / per_block;
}

void schedule_scatter_rows(CoordinateSchedule& schedule, const std::vector<int64_t>& in_sizes,
    const std::vector<int64_t>& index_sizes, int64_t dim, int64_t element_bytes) {
  const size_t last = in_sizes.size() - 1;
  const int64_t row = in_sizes[last];
  if (dim != static_cast<int64_t>(last) || row == 0 || row * element_bytes > kScatterRowBytes ||
      !std::equal(in_sizes.begin(), in_sizes.begin() + last, index_sizes.begin())) {
    return;
  }
  CoordinateParams& p = schedule.params;
  p.scatter_rows = true;
  p.unroll = 1;
  // A thread per vector of the row, at most 512. H100 sweep (8192-wide
  // rows, half of each overwritten; % of copy bandwidth at 64 / 256 MB,
  // 128 / 256 / 512 threads): fp32 88 / 91 / 102 and 95 / 98 / 102, bf16
  // 95 / 101 / 100 and 96 / 102 / 103. A block's three phases wait on
  // each other: the more threads share a row, the shorter each phase.
  const int64_t vectors = (row + p.vector_width - 1) / p.vector_width;
  p.block_size = static_cast<int>(std::clamp<int64_t>((vectors + 31) / 32 * 32, 32, 512));
  int64_t rows = 1;
  for (size_t axis = 0; axis < last; ++axis) {
    rows *= in_sizes[axis];
  }
  schedule.grid_size = std::min<int64_t>(rows, std::numeric_limits<int32_t>::max());
  schedule.shared_bytes = row * element_bytes;
}

namespace {

// One past the largest element offset of `t` (its span in elements).
int64_t span_of(const TensorArg& t) {
  int64_t span = 1;
  for (size_t axis = 0; axis < t.sizes.size(); ++axis) {
    if (t.sizes[axis] == 0) {
      return 0;
    }
    span += (t.sizes[axis] - 1) * std::llabs(t.strides[axis]);
  }
  return span;
}

// 16 bytes of the narrowest tensor per lane group (wider tensors move
// theirs as several 16-byte vectors), at most 8 lanes.
int widest_vector(const std::vector<TensorArg>& tensors) {
  int width = 1;
  for (const TensorArg& t : tensors) {
    width = std::max(width, static_cast<int>(16 / std::max<int64_t>(1, size_in_bytes(t.dtype))));
  }
  return std::min(width, 8);
}

// The unroll, index width and grid for the schedule's vector width.
void size_launch(CoordinateSchedule& schedule, const std::vector<TensorArg>& tensors,
    const CoordinateTuning& tuning) {
  CoordinateParams& p = schedule.params;
  int64_t widest = 1;
  for (const TensorArg& t : tensors) {
    widest = std::max(widest, size_in_bytes(t.dtype));
  }
  p.unroll = std::clamp(
      static_cast<int>(tuning.bytes_per_thread / (p.vector_width * widest)), 1, tuning.max_unroll);
  // The last thread's index, u * block past its first, must fit too.
  constexpr int64_t kInt32 = std::numeric_limits<int32_t>::max();
  const int64_t per_block = int64_t{p.block_size} * p.unroll;
  bool fits = schedule.numel + per_block < kInt32;
  for (const TensorArg& t : tensors) {
    fits = fits && span_of(t) < kInt32;
  }
  p.index_32bit = fits;
  const int64_t groups = schedule.numel / p.vector_width;
  schedule.grid_size = (groups + per_block - 1) / per_block;
}

}  // namespace

CoordinateSchedule schedule_coordinates(const std::vector<int64_t>& extents,
    const std::vector<TensorArg>& tensors, int64_t lane_alignment, const CoordinateTuning& tuning) {
  CoordinateSchedule schedule;
  schedule.params.block_size = tuning.block_size;
  schedule.params.rank = static_cast<int>(extents.size());
  schedule.numel = 1;
  for (int64_t e : extents) {
    schedule.numel *= e;
  }
  int width = widest_vector(tensors);
  const int64_t inner = extents.empty() ? 1 : extents.back();
  while (
      width > 1 && (inner % width != 0 || (lane_alignment != 0 && lane_alignment % width != 0))) {
    width /= 2;
  }
  schedule.params.vector_width = width;
  size_launch(schedule, tensors, tuning);
  return schedule;
}

void choose_flat_lanes(CoordinateSchedule& schedule, const std::vector<int64_t>& extents,
    const std::vector<TensorArg>& tensors, size_t first_output, bool allowed,
    const CoordinateTuning& tuning) {
  if (!allowed || extents.size() < 2 || schedule.numel == 0) {
    return;
  }
  const uint64_t dense = dense_tensors(extents, tensors);
  for (size_t t = first_output; t < tensors.size(); ++t) {
    if (t >= 64 || !(dense >> t & 1)) {
      return;
    }
  }
  int width = widest_vector(tensors);
  while (width > 1 && (schedule.numel % width != 0 || extents.back() < width)) {
    width /= 2;
  }
  CoordinateParams& p = schedule.params;
  if (width <= p.vector_width) {
    return;
  }
  p.flat_lanes = true;
  p.vector_width = width;
  p.dense_tensors = dense;
  p.vectors_aligned = true;
  for (size_t t = 0; t < tensors.size() && t < 64; ++t) {
    const uint64_t bytes = static_cast<uint64_t>(width) * size_in_bytes(tensors[t].dtype);
    p.vectors_aligned = p.vectors_aligned && (!(dense >> t & 1) || tensors[t].address % bytes == 0);
  }
  size_launch(schedule, tensors, tuning);
}

std::vector<int64_t> coordinate_divisors(const std::vector<int64_t>& extents, int width) {
  std::vector<int64_t> divisors;
  for (size_t axis = 0; axis < extents.size(); ++axis) {
    const int64_t d = axis + 1 == extents.size() ? extents[axis] / width : extents[axis];
    divisors.push_back(axis == 0 ? 1 : std::max<int64_t>(1, d));
  }
  return divisors;
}

bool vector_accesses_aligned(int width, const std::vector<TensorArg>& tensors,
    const std::vector<std::pair<size_t, int64_t>>& vectorized, const std::vector<int64_t>& shifts) {
  if (width <= 1) {
    return false;  // nothing is a vector: keep the kernel as it was
  }
  for (int64_t shift : shifts) {
    if (shift % width != 0) {
      return false;
    }
  }
  for (const auto& [index, lane_axis] : vectorized) {
    const TensorArg& t = tensors[index];
    const auto lanes = static_cast<size_t>(lane_axis);
    if (lanes >= t.sizes.size() || t.strides[lanes] != 1 ||
        t.address % (static_cast<uint64_t>(width) * size_in_bytes(t.dtype)) != 0) {
      return false;
    }
    for (size_t axis = 0; axis < t.sizes.size(); ++axis) {
      if (axis != lanes && t.sizes[axis] > 1 && t.strides[axis] % width != 0) {
        return false;
      }
    }
  }
  return true;
}

uint64_t dense_tensors(const std::vector<int64_t>& extents, const std::vector<TensorArg>& tensors) {
  uint64_t bits = 0;
  for (size_t t = 0; t < tensors.size() && t < 64; ++t) {
    const TensorArg& arg = tensors[t];
    bool dense = arg.sizes == extents;
    int64_t expected = 1;
    for (size_t axis = extents.size(); dense && axis-- > 0;) {
      dense = extents[axis] == 1 || arg.strides[axis] == expected;
      expected *= extents[axis];
    }
    if (dense) {
      bits |= uint64_t{1} << t;
    }
  }
  return bits;
}

}  // namespace nvfuse
