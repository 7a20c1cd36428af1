// The coordinate scheduler's heuristics: each thread handles `unroll`
// groups of `vector_width` consecutive elements along the innermost axis of
// the iteration space (the outputs' logical shape), the groups a block
// apart, so a warp's loads and stores stay coalesced (and vectorized where
// aligned) whatever an operand's coordinates are shifted by.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "schedule/tensor_arg.h"

namespace nvfuse {

struct CoordinateParams {
  int rank = 0;          // of the iteration space
  int vector_width = 1;  // lanes per thread along the innermost axis
  int block_size = 256;
  int unroll = 4;
  bool index_32bit = true;
  // Every vector access is aligned (checked on the host for this call's
  // tensors): the kernel carries no lane-by-lane fallback.
  bool vectors_aligned = false;
  // Bit t: kernel tensor t (inputs then outputs) is laid out row-major over
  // the iteration space (checked on the host for this call's tensors), so
  // its element at the group's own coordinates is at the group's linear
  // position: no coordinates before its address.
  uint64_t dense_tensors = 0;
  // The axis the cumsums walk (codegen/scan_codegen.h), -1 without: along
  // the innermost axis a warp per row, else a thread per group of kVec
  // lanes along the innermost axis, walking the scan axis.
  int scan_axis = -1;
  // A scatter along the innermost axis staged a row at a time in shared
  // memory (codegen/scatter_codegen.h): a block per output row.
  bool scatter_rows = false;
  // The lanes of a group are kVec consecutive elements in the iteration
  // space's row-major order, which may straddle the end of a row
  // (choose_flat_lanes): each lane has its own coordinates, the tensors
  // laid out densely are read and written as vectors at the group's linear
  // position, and every other access goes lane by lane.
  bool flat_lanes = false;
  // Set at launch, not by the scheduler: the launch is recorded into a CUDA
  // graph and its random ops read torch's graph-safe generator state
  // (codegen/index_values.h).
  bool graph_rng = false;

  std::string to_string() const;
  bool operator==(const CoordinateParams& other) const;
};

// The launch-shape choices: `block_size` threads, each moving about
// `bytes_per_thread` of the widest tensor (unroll = bytes_per_thread over
// a lane group's bytes of it, 1 to max_unroll): the loads a thread keeps
// in flight. Exposed so that tuning runs can sweep them
// (nvfuse._C.set_coordinate_tuning, tools/tune_coordinate.py). H100 sweep
// at 64 MB, % of copy bandwidth, 128 threads with 16 / 32 / 64 bytes a
// thread: RoPE bf16 102 / 99 / 98 (256 MB: 101 / 99 / 98), fp32 101 / 99
// / 97. 32 bytes won for bf16 RoPE (97 against 88) while it read the
// rotated half under two predicated loads; read once (a cat of one
// tensor, codegen/coordinate_cat.cpp) one group a thread is best, as it
// always was for dropout + residual (bf16 104 / 99 / 97, fp32 105 / 102 /
// 100). 256 and 512 threads: no better.
struct CoordinateTuning {
  int block_size = 128;
  int bytes_per_thread = 16;
  int max_unroll = 4;
};

struct CoordinateSchedule {
  CoordinateParams params;
  int64_t numel = 0;
  int64_t grid_size = 0;     // blocks; 0 when there is nothing to do
  int64_t shared_bytes = 0;  // dynamic shared memory per block
};

// `tensors`: every tensor the kernel reads or writes; `extents`: the
// iteration space; `lane_alignment`: what every lane-axis boundary the
// kernel tests is a multiple of (0: any), or 1 when lanes cannot share
// predicates. The vector width is the widest (16 bytes of the narrowest
// tensor, at most 8 lanes) that divides the innermost extent and
// lane_alignment. 32-bit indexing when every offset fits.
CoordinateSchedule schedule_coordinates(const std::vector<int64_t>& extents,
    const std::vector<TensorArg>& tensors, int64_t lane_alignment,
    const CoordinateTuning& tuning = {});

// Lanes in the flat (row-major) order instead of along rows, where that
// gives wider vectors: rows whose length no vector width divides (a
// 50,257-word vocabulary) or whose pad or slice boundaries are not
// multiples of one (the vocabulary padded to 50,264) leave the row-wise
// kernel one element a thread, whose few loads in flight hold it to about
// a third of the memory bandwidth. It applies when the fusion allows it
// (`allowed`: LaneRequirements::flat), the iteration space has at least two
// axes and every output (tensors from `first_output` on) is laid out
// densely; the width is the widest that divides the element count and is
// at most the innermost extent (a group then spans at most two rows), and
// it must be wider than the row-wise one. Vectors are aligned when every
// dense tensor's address is.
void choose_flat_lanes(CoordinateSchedule& schedule, const std::vector<int64_t>& extents,
    const std::vector<TensorArg>& tensors, size_t first_output, bool allowed,
    const CoordinateTuning& tuning = {});

// The longest output row (bytes) a scatter stages in shared memory: the
// most a block takes without opting in to more, which leaves room for
// several blocks an SM (an 8192-wide fp32 row is 32 KB).
constexpr int64_t kScatterRowBytes = 48 << 10;

// A scatter's staged-row launch (CoordinateParams::scatter_rows) when it
// applies: the scatter along the innermost axis of `in_sizes`, the index
// tensor (`index_sizes`, the iteration space) as large as the input but
// along that axis, a row within kScatterRowBytes. A block per row, of a
// thread per vector of the row up to 512.
void schedule_scatter_rows(CoordinateSchedule& schedule, const std::vector<int64_t>& in_sizes,
    const std::vector<int64_t>& index_sizes, int64_t dim, int64_t element_bytes);

// A scan kernel's launch (CoordinateParams::scan_axis): one thread per
// group, or one warp per row when the scan axis is the innermost one.
void schedule_scan(
    CoordinateSchedule& schedule, const std::vector<int64_t>& extents, int scan_axis);

// Per axis, what the kernel divides a group index by to find that axis's
// coordinate (its FastDividers): the innermost extent in groups of `width`
// lanes (whole elements with flat lanes: `width` 1), the others' extents;
// axis 0 is never divided (1).
std::vector<int64_t> coordinate_divisors(const std::vector<int64_t>& extents, int width);

// Whether every vector access of `width` lanes is aligned: each of
// `vectorized` (an index into `tensors` and the axis its lanes run along)
// has unit stride along that axis, an address aligned to the vector and
// strides of whole vectors along the others, and every shift of the lane
// coordinate (`shifts`) is a multiple of `width`.
bool vector_accesses_aligned(int width, const std::vector<TensorArg>& tensors,
    const std::vector<std::pair<size_t, int64_t>>& vectorized, const std::vector<int64_t>& shifts);

// The tensors (bit t for tensors[t]) laid out row-major over `extents`:
// the same sizes, unit stride innermost, each outer stride the product of
// the extents inside it (axes of extent 1 excepted).
uint64_t dense_tensors(const std::vector<int64_t>& extents, const std::vector<TensorArg>& tensors);

}  // namespace nvfuse
