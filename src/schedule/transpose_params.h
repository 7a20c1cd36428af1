// The transpose scheduler's heuristics: a reduction-free fusion whose
// tensors disagree on the innermost axis (a transposed input, an output in
// another layout) runs as tiles staged through shared memory, so that both
// the reads and the writes are coalesced. The pointwise kernel would walk
// one side of such a fusion element by element, 32 cache lines per warp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "schedule/tensor_arg.h"

namespace nvfuse {

struct IterationSpace;

// Part of PointwiseParams: whether, and how, the kernel tiles.
struct TransposeTiling {
  // The iteration axis along which the transposed tensors are contiguous
  // (stride 1); -1 when the kernel is the plain pointwise one.
  int axis = -1;
  // Each block walks a tile x tile square of (axis, innermost axis).
  int tile = 0;
  // Per kernel tensor (inputs, then outputs): true when it is contiguous
  // along `axis` rather than along the innermost axis, so it is read (or
  // written) a tile at a time through shared memory.
  std::vector<bool> transposed;

  bool enabled() const { return axis >= 0; }
  std::string to_string() const;
  bool operator==(const TransposeTiling& other) const;
};

// The threads of a tiled block: tile / vector_width lanes along the
// contiguous axis of each phase (each moving vector_width elements at a
// time), kTransposeThreads / lanes rows of them.
constexpr int kTransposeThreads = 256;

// Elements of padding after each row of a shared tile, so that a column
// walk (lane l reading row l * vector_width) steps an odd number of 4-byte
// banks per lane and hits 32 different banks where the element size
// allows (8-byte elements, and fp32 in vectors, get 2-way conflicts).
int tile_row_padding(DataType dtype, int tile, int vector_width);

// The tiling for one call's iteration space, or nullopt when the pointwise
// kernel serves: every tensor must be contiguous or broadcast along the
// innermost axis, or contiguous along one other axis, the same for all; at
// least one of the latter; both axes at least kMinTransposeExtent long
// (below that a tile is mostly idle threads); and the tiles must fit in
// shared memory.
// `tile` 0 picks 64 (on an H100, 64 beat 32 by 2-20 points of copy
// bandwidth for fp32 and bf16), shrunk to 32 where the tiles would not
// fit; tuning runs pass one.
std::optional<TransposeTiling> choose_transpose_tiling(
    const IterationSpace& space, const std::vector<TensorArg>& tensors, int tile = 0);

// Elements per vector access along the contiguous axis of each phase:
// `requested` (0: 4, or 16 bytes of the widest tensor if fewer), halved
// until every tensor read or written as vectors has aligned addresses,
// strides and extents. On an H100 (tools/tune_pointwise.py --tiles), 4
// beat 1 and 2 by up to 16 points of copy bandwidth for bf16 (8-byte
// accesses) and by 0-2 for fp32, even with the 2- and 4-way bank conflicts
// its column walks then have.
int transpose_vector_width(const IterationSpace& space, const std::vector<TensorArg>& tensors,
    const TransposeTiling& tiling, int requested = 0);

constexpr int64_t kMinTransposeExtent = 16;

// Blocks: one per tile of (axis, innermost axis) per coordinate of the
// other axes.
int64_t transpose_grid_size(const IterationSpace& space, const TransposeTiling& tiling);

}  // namespace nvfuse
