#include "schedule/reductions/reduction_walk.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace nvfuse {

namespace {

constexpr int kVectorBytes = 16;  // the widest global load/store

// Axes grouped by merging: extents and, per tensor, strides.
struct MergedAxes {
  std::vector<int64_t> extents;
  std::vector<std::vector<int64_t>> strides;
};

// Merges `axes` (outermost first) where every tensor is packed across two
// neighbours: stride_outer == stride_inner * extent_inner.
MergedAxes merge(const std::vector<int>& axes, const std::vector<int64_t>& extents,
    const std::vector<std::vector<int64_t>>& strides) {
  MergedAxes merged;
  merged.strides.resize(strides.size());
  for (int axis : axes) {
    const int64_t extent = extents[axis];
    if (extent == 1) {
      continue;
    }
    bool mergeable = !merged.extents.empty();
    for (size_t t = 0; mergeable && t < strides.size(); ++t) {
      mergeable = merged.strides[t].back() == strides[t][axis] * extent;
    }
    if (mergeable) {
      merged.extents.back() *= extent;
      for (size_t t = 0; t < strides.size(); ++t) {
        merged.strides[t].back() = strides[t][axis];
      }
      continue;
    }
    merged.extents.push_back(extent);
    for (size_t t = 0; t < strides.size(); ++t) {
      merged.strides[t].push_back(strides[t][axis]);
    }
  }
  return merged;
}

bool fits_32bit(const ReductionSpace& space) {
  const int64_t limit = std::numeric_limits<int32_t>::max() - (int64_t{1} << 22);
  if (space.rows * std::max<int64_t>(space.width, 1) >= limit) {
    return false;
  }
  for (size_t t = 0; t < space.col_strides.size(); ++t) {
    int64_t max_offset = (space.width - 1) * std::abs(space.col_strides[t]);
    for (size_t axis = 0; axis < space.row_extents.size(); ++axis) {
      max_offset += (space.row_extents[axis] - 1) * std::abs(space.row_strides[t][axis]);
    }
    if (max_offset >= limit) {
      return false;
    }
  }
  return true;
}

// The kernel's tensors: its inputs, then its outputs.
std::vector<const TensorView*> kernel_tensors(const ReductionAnalysis& analysis) {
  std::vector<const TensorView*> views(analysis.inputs.begin(), analysis.inputs.end());
  const std::vector<const TensorView*> outputs = analysis.kernel_outputs();
  views.insert(views.end(), outputs.begin(), outputs.end());
  return views;
}

// Per kernel tensor (inputs, then outputs), then per position tensor: its
// stride along each reference axis (0 where it has none).
std::vector<std::vector<int64_t>> reference_strides(const ReductionAnalysis& analysis,
    const ReductionWalk& walk, const std::vector<TensorArg>& positions) {
  const int rank = analysis.rank;
  const std::vector<const TensorView*> views = kernel_tensors(analysis);
  std::vector<std::vector<int64_t>> strides(walk.tensors.size(), std::vector<int64_t>(rank, 0));
  for (size_t t = 0; t < walk.tensors.size(); ++t) {
    const std::vector<int>& map = analysis.axis_map.at(views[t]);
    for (size_t i = 0; i < map.size(); ++i) {
      if (map[i] >= 0 && walk.tensors[t].sizes[i] != 1) {
        strides[t][map[i]] = walk.tensors[t].strides[i];
      }
    }
  }
  // Position tensors: contiguous row-major over their own sizes, so that
  // their offset is the element's position. They take part in the walk
  // (merged axes, index width) but not in the choice of order or vectors.
  for (size_t i = 0; i < positions.size(); ++i) {
    const std::vector<int>& map = analysis.axis_map.at(analysis.position_tensors[i]);
    std::vector<int64_t> along(rank, 0);
    int64_t stride = 1;
    for (size_t axis = map.size(); axis-- > 0;) {
      if (map[axis] >= 0 && positions[i].sizes[axis] != 1) {
        along[map[axis]] = stride;
      }
      stride *= positions[i].sizes[axis];
    }
    strides.push_back(std::move(along));
  }
  return strides;
}

std::vector<bool> per_element_tensors(
    const ReductionAnalysis& analysis, const ReductionWalk& walk) {
  const std::vector<const TensorView*> views = kernel_tensors(analysis);
  std::vector<bool> per_element(walk.tensors.size());
  for (size_t t = 0; t < walk.tensors.size(); ++t) {
    // Column outputs are written by the finishing kernel only.
    const bool column_output = t >= walk.input_count + analysis.outputs.size();
    per_element[t] = !analysis.is_per_row(views[t]) && !column_output;
  }
  return per_element;
}

// The largest per-element input, or the first per-element output when no
// input varies along the reduced axes; -1 when there is neither.
int main_tensor_of(const ReductionWalk& walk) {
  int main_tensor = -1;
  int64_t main_bytes = -1;
  for (size_t t = 0; t < walk.tensors.size(); ++t) {
    if (!walk.per_element[t]) {
      continue;
    }
    if (t >= walk.input_count && main_tensor >= 0) {
      break;
    }
    int64_t bytes = size_in_bytes(walk.tensors[t].dtype);
    for (int64_t s : walk.tensors[t].sizes) {
      bytes *= s;
    }
    if (bytes > main_bytes) {
      main_tensor = static_cast<int>(t);
      main_bytes = bytes;
    }
  }
  return main_tensor;
}

// The reference axes from the main tensor's outermost to its innermost.
std::vector<int> walking_order(const std::vector<std::vector<int64_t>>& strides, int main_tensor,
    const std::vector<int64_t>& reference_sizes) {
  const int rank = static_cast<int>(reference_sizes.size());
  std::vector<int64_t> main_strides(rank);
  if (main_tensor >= 0) {
    main_strides = strides[main_tensor];
  } else {
    int64_t s = 1;
    for (int axis = rank - 1; axis >= 0; --axis) {
      main_strides[axis] = s;
      s *= reference_sizes[axis];
    }
  }
  std::vector<int> order(rank);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(
      order.begin(), order.end(), [&](int a, int b) { return main_strides[a] > main_strides[b]; });
  return order;
}

}  // namespace

int vector_width_for(const std::vector<TensorArg>& tensors, const std::vector<bool>& vectorized,
    const std::vector<bool>& drives, const std::vector<InnerAccess>& access, int64_t extent,
    const std::vector<std::vector<int64_t>>& other_strides) {
  int64_t widest = 1;
  for (size_t t = 0; t < tensors.size(); ++t) {
    if (vectorized[t] && access[t] == InnerAccess::kStrided) {
      return 1;
    }
  }
  for (bool only_drivers : {true, false}) {
    for (size_t t = 0; t < tensors.size(); ++t) {
      if (vectorized[t] && access[t] == InnerAccess::kContiguous && (drives[t] || !only_drivers)) {
        widest = std::max(widest, size_in_bytes(tensors[t].dtype));
      }
    }
    if (widest > 1) {
      break;  // else no driver is contiguous: size by every tensor
    }
  }
  for (int width = static_cast<int>(kVectorBytes / widest); width > 1; width /= 2) {
    bool fits = extent % width == 0;
    for (size_t t = 0; fits && t < tensors.size(); ++t) {
      if (!vectorized[t] || access[t] != InnerAccess::kContiguous) {
        continue;
      }
      fits = tensors[t].address % (width * size_in_bytes(tensors[t].dtype)) == 0;
      for (int64_t s : other_strides[t]) {
        fits = fits && s % width == 0;
      }
    }
    if (fits) {
      return width;
    }
  }
  return 1;
}

std::optional<ReductionWalk> walk_reduction(const ReductionAnalysis& analysis,
    const std::vector<int64_t>& reference_sizes, const std::vector<TensorArg>& inputs,
    const std::vector<TensorArg>& outputs, const std::vector<TensorArg>& positions) {
  ReductionWalk walk;
  walk.tensors = inputs;
  walk.tensors.insert(walk.tensors.end(), outputs.begin(), outputs.end());
  walk.input_count = inputs.size();
  walk.per_element = per_element_tensors(analysis, walk);
  walk.main_tensor = main_tensor_of(walk);
  const std::vector<std::vector<int64_t>> strides = reference_strides(analysis, walk, positions);

  std::vector<int> kept;
  std::vector<int> reduced;
  for (int axis : walking_order(strides, walk.main_tensor, reference_sizes)) {
    (analysis.reduced[axis] ? reduced : kept).push_back(axis);
  }
  const MergedAxes rows = merge(kept, reference_sizes, strides);
  const MergedAxes cols = merge(reduced, reference_sizes, strides);
  if (cols.extents.size() > 1) {
    return std::nullopt;  // the reduced axes are not one strided axis
  }

  ReductionSpace& space = walk.schedule.space;
  space.row_extents = rows.extents.empty() ? std::vector<int64_t>{1} : rows.extents;
  space.row_strides = rows.strides;
  for (auto& s : space.row_strides) {
    if (s.empty()) {
      s.push_back(0);
    }
  }
  for (int axis : reduced) {
    space.width *= reference_sizes[axis];
  }
  for (int64_t e : space.row_extents) {
    space.rows *= e;
  }
  for (size_t t = 0; t < strides.size(); ++t) {
    space.col_strides.push_back(cols.extents.empty() ? 0 : cols.strides[t][0]);
  }
  walk.schedule.params.row_rank = static_cast<int>(space.row_extents.size());
  walk.schedule.params.index_32bit = fits_32bit(space);
  return walk;
}

}  // namespace nvfuse
