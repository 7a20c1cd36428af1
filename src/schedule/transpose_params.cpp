#include "schedule/transpose_params.h"

#include <algorithm>
#include <sstream>

#include "schedule/pointwise_params.h"

namespace nvfuse {

namespace {

// Static shared memory a kernel may declare without opting in.
constexpr int64_t kSharedBytes = 48 * 1024;

// The one axis (other than the innermost) along which every tensor that is
// strided along the innermost axis has stride 1; -1 when there is none or
// they disagree.
int transposed_axis(const IterationSpace& space) {
  const int inner = static_cast<int>(space.extents.size()) - 1;
  int axis = -1;
  for (const auto& strides : space.strides) {
    if (strides[inner] == 0 || strides[inner] == 1) {
      continue;
    }
    const auto unit = std::find(strides.begin(), strides.end() - 1, 1);
    if (unit == strides.end() - 1) {
      return -1;
    }
    const int candidate = static_cast<int>(unit - strides.begin());
    if (axis >= 0 && candidate != axis) {
      return -1;
    }
    axis = candidate;
  }
  return axis;
}

int64_t shared_bytes(
    const std::vector<TensorArg>& tensors, const std::vector<bool>& transposed, int tile) {
  int64_t bytes = 0;
  for (size_t t = 0; t < tensors.size(); ++t) {
    if (transposed[t]) {
      const DataType dtype = tensors[t].dtype;
      // The padding of scalar accesses: the most any vector width needs.
      bytes += int64_t{tile} * (tile + tile_row_padding(dtype, tile, 1)) * size_in_bytes(dtype);
    }
  }
  return bytes;
}

}  // namespace

int tile_row_padding(DataType dtype, int tile, int vector_width) {
  const int64_t size = size_in_bytes(dtype);
  for (int pad = 1; pad <= 8; ++pad) {
    // A lane's step, vector_width rows, is 4 bytes times an odd number.
    if (vector_width * (tile + pad) * size % 8 == 4) {
      return pad;
    }
  }
  return 1;
}

std::optional<TransposeTiling> choose_transpose_tiling(
    const IterationSpace& space, const std::vector<TensorArg>& tensors, int tile) {
  if (space.extents.size() < 2) {
    return std::nullopt;
  }
  const int axis = transposed_axis(space);
  const int inner = static_cast<int>(space.extents.size()) - 1;
  if (axis < 0 || space.extents[axis] < kMinTransposeExtent ||
      space.extents[inner] < kMinTransposeExtent) {
    return std::nullopt;
  }
  TransposeTiling tiling;
  tiling.axis = axis;
  for (size_t t = 0; t < tensors.size(); ++t) {
    const int64_t inner_stride = space.strides[t][inner];
    tiling.transposed.push_back(inner_stride != 0 && inner_stride != 1);
  }
  tiling.tile = tile > 0 ? tile : 64;
  while (shared_bytes(tensors, tiling.transposed, tiling.tile) > kSharedBytes) {
    if (tiling.tile == 32) {
      return std::nullopt;  // too many transposed tensors for one block
    }
    tiling.tile = 32;
  }
  return tiling;
}

int transpose_vector_width(const IterationSpace& space, const std::vector<TensorArg>& tensors,
    const TransposeTiling& tiling, int requested) {
  const int inner = static_cast<int>(space.extents.size()) - 1;
  int64_t widest = 1;
  for (const TensorArg& t : tensors) {
    widest = std::max(widest, size_in_bytes(t.dtype));
  }
  int width = requested > 0 ? requested : static_cast<int>(std::clamp<int64_t>(16 / widest, 1, 4));
  const auto fits = [&](int w) {
    for (size_t t = 0; t < tensors.size(); ++t) {
      const std::vector<int64_t>& strides = space.strides[t];
      if (strides[inner] == 0) {
        continue;  // broadcast along i: read one element at a time
      }
      // Along this axis the tensor is contiguous and read as vectors.
      const int along = tiling.transposed[t] ? tiling.axis : inner;
      if (space.extents[along] % w != 0 ||
          tensors[t].address % (w * size_in_bytes(tensors[t].dtype)) != 0) {
        return false;
      }
      for (size_t a = 0; a < strides.size(); ++a) {
        if (static_cast<int>(a) != along && strides[a] % w != 0) {
          return false;
        }
      }
    }
    return true;
  };
  while (width > 1 && (tiling.tile % width != 0 || !fits(width))) {
    width /= 2;
  }
  return width;
}

int64_t transpose_grid_size(const IterationSpace& space, const TransposeTiling& tiling) {
  const auto tiles = [&](int64_t extent) { return (extent + tiling.tile - 1) / tiling.tile; };
  const int inner = static_cast<int>(space.extents.size()) - 1;
  int64_t blocks = tiles(space.extents[inner]) * tiles(space.extents[tiling.axis]);
  for (int a = 0; a < inner; ++a) {
    if (a != tiling.axis) {
      blocks *= space.extents[a];
    }
  }
  return blocks;
}

std::string TransposeTiling::to_string() const {
  std::ostringstream ss;
  ss << "TransposeTiling(axis=" << axis << ", tile=" << tile << ", transposed=[";
  for (size_t t = 0; t < transposed.size(); ++t) {
    ss << (t ? ", " : "") << (transposed[t] ? "yes" : "no");
  }
  ss << "])";
  return ss.str();
}

bool TransposeTiling::operator==(const TransposeTiling& other) const {
  return axis == other.axis && tile == other.tile && transposed == other.transposed;
}

}  // namespace nvfuse
