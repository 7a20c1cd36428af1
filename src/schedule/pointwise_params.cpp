#include "schedule/pointwise_params.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <sstream>

#include "ir/errors.h"

namespace nvfuse {

namespace {

constexpr int kVectorBytes = 16;  // the widest global load/store

// The first output's allocation order: iteration axes, outermost first.
std::vector<int> iteration_order(const TensorArg& reference) {
  std::vector<int> order(reference.sizes.size());
  std::iota(order.begin(), order.end(), 0);
  // Larger stride first; equal strides (size-1 axes) keep logical order.
  std::stable_sort(order.begin(), order.end(),
      [&](int a, int b) { return reference.strides[a] > reference.strides[b]; });
  return order;
}

// Per iteration axis, the tensor's stride there: from the logical axis
// mapped to it, 0 where the tensor broadcasts or has no such axis.
std::vector<int64_t> iteration_strides(
    const TensorArg& arg, const std::vector<int>& axis_map, int rank) {
  std::vector<int64_t> strides(rank, 0);
  for (size_t axis = 0; axis < axis_map.size(); ++axis) {
    const int target = axis_map[axis];
    if (target >= 0 && arg.sizes[axis] != 1) {
      strides[target] = arg.strides[axis];
    }
  }
  return strides;
}

IterationSpace build_space(const PointwiseAnalysis& analysis, const std::vector<TensorArg>& tensors,
    const std::vector<const TensorView*>& tensor_views) {
  const TensorArg& reference = tensors[analysis.inputs.size()];
  const int rank = analysis.rank;
  std::vector<std::vector<int64_t>> logical_strides;
  for (size_t t = 0; t < tensors.size(); ++t) {
    logical_strides.push_back(
        iteration_strides(tensors[t], analysis.axis_map.at(tensor_views[t]), rank));
  }
  IterationSpace space;
  space.strides.resize(tensors.size());
  for (int axis : iteration_order(reference)) {
    const int64_t extent = reference.sizes[axis];
    space.numel *= extent;
    if (extent == 1) {
      continue;  // nothing to iterate
    }
    // Merge into the previous (outer) axis when every tensor is packed
    // across the two: stride_outer == stride_inner * extent_inner.
    bool mergeable = !space.extents.empty();
    for (size_t t = 0; mergeable && t < tensors.size(); ++t) {
      mergeable = space.strides[t].back() == logical_strides[t][axis] * extent;
    }
    if (mergeable) {
      space.extents.back() *= extent;
      for (size_t t = 0; t < tensors.size(); ++t) {
        space.strides[t].back() = logical_strides[t][axis];
      }
      continue;
    }
    space.extents.push_back(extent);
    for (size_t t = 0; t < tensors.size(); ++t) {
      space.strides[t].push_back(logical_strides[t][axis]);
    }
  }
  if (space.extents.empty()) {  // a single element (or 0-d outputs)
    space.extents.push_back(1);
    for (auto& s : space.strides) {
      s.push_back(0);
    }
  }
  return space;
}

// Whether tensor `t` moves with the outer axes (each row its own memory),
// not one row read again by every row (a per-channel scale in a
// channels-last activation's space).
bool streams(const IterationSpace& space, size_t t) {
  const auto& strides = space.strides[t];
  return strides.size() < 2 ||
      std::any_of(strides.begin(), strides.end() - 1, [](int64_t s) { return s != 0; });
}

// The widest vector (in elements) every tensor can take: 16 bytes of the
// widest tensor that streams, and at most two such loads of a row that
// every row reads again (cached: a float scale beside bf16 activations
// held their loads to 8 bytes). Contiguous tensors need aligned addresses
// and rows that start aligned; a row of the inner axis must hold whole
// vectors unless the space is flat (the kernel then handles the tail
// separately).
int vector_width_for(const IterationSpace& space, const std::vector<TensorArg>& tensors,
    const std::vector<InnerAccess>& access) {
  int64_t widest_streamed = 0;
  int64_t widest_row = 0;
  for (size_t t = 0; t < tensors.size(); ++t) {
    if (access[t] == InnerAccess::kStrided) {
      return 1;
    }
    if (access[t] == InnerAccess::kContiguous) {
      int64_t& widest = streams(space, t) ? widest_streamed : widest_row;
      widest = std::max(widest, size_in_bytes(tensors[t].dtype));
    }
  }
  int64_t width_bytes = kVectorBytes / std::max<int64_t>(widest_streamed, 1);
  if (widest_row > 0) {
    width_bytes = std::min(width_bytes, 2 * kVectorBytes / widest_row);
  }
  int width = static_cast<int>(std::max<int64_t>(width_bytes, 1));
  const size_t rank = space.extents.size();
  for (; width > 1; width /= 2) {
    bool fits = rank == 1 || space.extents.back() % width == 0;
    for (size_t t = 0; fits && t < tensors.size(); ++t) {
      if (access[t] != InnerAccess::kContiguous) {
        continue;
      }
      const uint64_t bytes = width * size_in_bytes(tensors[t].dtype);
      fits = tensors[t].address % bytes == 0;
      for (size_t axis = 0; fits && axis + 1 < rank; ++axis) {
        fits = space.strides[t][axis] % width == 0;
      }
    }
    if (fits) {
      return width;
    }
  }
  return 1;
}

// 32-bit indexing when no offset the kernel computes can reach 2^31.
bool fits_32bit_indexing(const IterationSpace& space, const PointwiseParams& params) {
  const int64_t limit = std::numeric_limits<int32_t>::max();
  const int64_t slack =
      static_cast<int64_t>(params.vector_width) * params.unroll * params.block_size;
  if (space.numel + slack >= limit) {
    return false;
  }
  for (const auto& strides : space.strides) {
    int64_t max_offset = 0;
    for (size_t axis = 0; axis < strides.size(); ++axis) {
      max_offset += (space.extents[axis] - 1) * std::abs(strides[axis]);
    }
    if (max_offset + params.vector_width >= limit) {
      return false;
    }
  }
  return true;
}

}  // namespace

InnerAccess inner_access_of(int64_t inner_stride) {
  if (inner_stride == 1) {
    return InnerAccess::kContiguous;
  }
  return inner_stride == 0 ? InnerAccess::kBroadcast : InnerAccess::kStrided;
}

PointwiseSchedule schedule_pointwise(const PointwiseAnalysis& analysis,
    const std::vector<TensorArg>& inputs, const std::vector<TensorArg>& outputs,
    const DeviceInfo& device, const PointwiseTuning& tuning) {
  NVFUSE_ASSERT_EQ(inputs.size(), analysis.inputs.size(), "kernel inputs");
  NVFUSE_ASSERT_EQ(outputs.size(), analysis.outputs.size(), "kernel outputs");
  std::vector<TensorArg> tensors = inputs;
  tensors.insert(tensors.end(), outputs.begin(), outputs.end());
  std::vector<const TensorView*> views(analysis.inputs.begin(), analysis.inputs.end());
  views.insert(views.end(), analysis.outputs.begin(), analysis.outputs.end());

  PointwiseSchedule schedule;
  schedule.space = build_space(analysis, tensors, views);
  PointwiseParams& params = schedule.params;
  params.collapsed_rank = static_cast<int>(schedule.space.extents.size());
  params.block_size = tuning.block_size;
  for (const auto& strides : schedule.space.strides) {
    params.inner_access.push_back(inner_access_of(strides.back()));
  }
  if (auto tiling = choose_transpose_tiling(schedule.space, tensors, tuning.transpose_tile)) {
    params.transpose = std::move(*tiling);
    params.block_size = kTransposeThreads;
    params.vector_width =
        transpose_vector_width(schedule.space, tensors, params.transpose, tuning.transpose_vector);
    params.index_32bit = fits_32bit_indexing(schedule.space, params);
    schedule.grid_size =
        schedule.space.numel == 0 ? 0 : transpose_grid_size(schedule.space, params.transpose);
    return schedule;
  }
  params.vector_width = vector_width_for(schedule.space, tensors, params.inner_access);
  if (params.vector_width == 1) {
    for (InnerAccess& access : params.inner_access) {
      access = InnerAccess::kStrided;  // element by element, by offsets
    }
  }

  // Unroll (several independent vector loads in flight per thread) unless
  // that would leave the GPU with too few blocks.
  const int64_t groups = schedule.space.numel / params.vector_width;
  int elements = tuning.elements_per_thread;
  if (tuning.heavy_math_budget > 0 && analysis.heavy_math_ops > 0) {
    elements = std::min(elements, std::max(1, tuning.heavy_math_budget / analysis.heavy_math_ops));
  }
  params.unroll = std::clamp(elements / params.vector_width, 1, tuning.max_unroll);
  while (params.unroll > 1 &&
      groups / (int64_t{params.block_size} * params.unroll) < 4 * int64_t{device.sm_count}) {
    params.unroll /= 2;
  }
  params.index_32bit = fits_32bit_indexing(schedule.space, params);
  const int64_t per_block = int64_t{params.block_size} * params.unroll;
  schedule.grid_size =
      schedule.space.numel == 0 ? 0 : std::max<int64_t>(1, (groups + per_block - 1) / per_block);
  return schedule;
}

std::string PointwiseParams::to_string() const {
  std::ostringstream ss;
  ss << "PointwiseParams(collapsed_rank=" << collapsed_rank << ", vector_width=" << vector_width
     << ", unroll=" << unroll << ", block_size=" << block_size
     << ", index=" << (index_32bit ? "int32" : "int64") << ", inner_access=[";
  for (size_t i = 0; i < inner_access.size(); ++i) {
    ss << (i ? ", " : "")
       << (inner_access[i] == InnerAccess::kContiguous         ? "contiguous"
                  : inner_access[i] == InnerAccess::kBroadcast ? "broadcast"
                                                               : "strided");
  }
  ss << "]";
  if (transpose.enabled()) {
    ss << ", " << transpose.to_string();
  }
  ss << ")";
  return ss.str();
}

bool PointwiseParams::operator==(const PointwiseParams& other) const {
  return collapsed_rank == other.collapsed_rank && vector_width == other.vector_width &&
      unroll == other.unroll && block_size == other.block_size &&
      index_32bit == other.index_32bit && inner_access == other.inner_access &&
      transpose == other.transpose;
}

}  // namespace nvfuse
