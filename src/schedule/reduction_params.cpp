#include "schedule/reduction_params.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <set>
#include <sstream>

#include "ir/errors.h"
#include "schedule/cluster_shapes.h"

namespace nvfuse {

namespace {

constexpr int kVectorBytes = 16;       // the widest global load/store
constexpr int kShortRowBlock = 128;    // inner, several rows per block
// Outer blocks: 512 threads (16 rows of 32 threads; a bf16 sum's kernel at
// 40 registers, 3 an SM) where 256 (8 rows) split a reduction over twice
// the blocks, whose partial rows the last block combines: a bf16 sum over
// 8192 rows of 4096 (H100, % of copy bandwidth) 62 -> 71. Welford states
// (a variance) keep 256: their kernels take about 80 registers, at which
// an SM holds one block of 512 threads but three of 256.
constexpr int kOuterBlock = 512;
constexpr int kOuterWelfordBlock = 256;
constexpr int64_t kMaxHalfElementRowThreads = 256;  // see half_element_rows
constexpr int kShortChunkThreads = 512;  // chunked rows of at most two chunks
constexpr int64_t kMaxChunkedRowBytes = 64;  // see the chunked rows in schedule_reduction
constexpr int64_t kMaxStreamedColumnElements = 8;  // see the streamed rows there
constexpr int64_t kMaxHeldColumnBytes = 256;  // see ReductionParams::hold_columns
constexpr int64_t kMaxColumnPartialBytes = 256;  // see ReductionParams::staged
constexpr int kMaxColumnHolderBlock = 512;  // see ReductionParams::hold_columns
// Late-draw rows take at most this many threads: 1024-thread blocks get 64
// registers, and a bf16 layer norm followed by dropout at 16384 (16
// elements a thread) spilled 12 bytes.
constexpr int64_t kMaxLateDrawBlock = 512;
// Late-draw rows that carry their exps (ReductionParams::late_draws) state
// this many threads a SM over their block size as __launch_bounds__'s
// blocks per SM: 64 registers a thread.
constexpr int kLateDrawRegisterBlocks = 1024;
// Those with a masked fill hold twice the elements (see the inner rows'
// groups): 72 registers a thread; at 64 their bf16 attention prologue
// spilled 24 bytes (and measured 88 / 98% of copy bandwidth at 64 / 256
// MB on an H100 with the spills, 85 / 94 at 80 registers).
constexpr int kMaskedLateDrawRegisterBlocks = 896;
// Pipelined rows: the most bytes of row inputs a thread holds per row (the
// next row's copy doubles them), and the least row groups per SM. Measured
// on an H100 at 32768x8192 (tools/tune_reduction.py, % of copy bandwidth):
// pipelining lifts the bf16 rows that hold two inputs and reduce a
// variance (bias + residual + layer norm 58 -> 97: the
// variance's two dependent row sums double the latency a row's loads must
// cover, and a bf16 row carries half the bytes), while it costs the rows
// of one held input (layer norm bf16 101 -> 95, var_mean bf16 103 -> 100),
// the fp32 ones (layer norm 100 -> 95) and the other bf16 ones (softmax
// 81 -> 68, RMS norm 99 -> 95, sum 98 -> 95) the occupancy that the second
// copy's registers take.
constexpr int64_t kMaxPipelinedBytes = 64;
constexpr int64_t kLeastPipelinedRowGroups = 8;
// Axes grouped by merging: extents and, per tensor, strides.
struct MergedAxes {
  std::vector<int64_t> extents;
  std::vector<std::vector<int64_t>> strides;
};

// Merges `axes` (outermost first) where every tensor is packed across two
// neighbours: stride_outer == stride_inner * extent_inner.
MergedAxes merge(
    const std::vector<int>& axes,
    const std::vector<int64_t>& extents,
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

// The widest vector every tensor in `vectorized` takes: 16 bytes of the
// widest contiguous tensor in `drives` (the traffic that matters: a bf16
// input read per element outweighs a float result written per row, which
// then takes two 16-byte stores), stepped down until extents, addresses and
// the other strides are multiples of it.
int vector_width_for(
    const std::vector<TensorArg>& tensors,
    const std::vector<bool>& vectorized,
    const std::vector<bool>& drives,
    const std::vector<InnerAccess>& access,
    int64_t extent,
    const std::vector<std::vector<int64_t>>& other_strides) {
  int64_t widest = 1;
  for (size_t t = 0; t < tensors.size(); ++t) {
    if (!vectorized[t]) {
      continue;
    }
    if (access[t] == InnerAccess::kStrided) {
      return 1;
    }
  }
  for (bool only_drivers : {true, false}) {
    for (size_t t = 0; t < tensors.size(); ++t) {
      if (vectorized[t] && access[t] == InnerAccess::kContiguous &&
          (drives[t] || !only_drivers)) {
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

}  // namespace

int64_t partial_slot_bytes(const Expr& reduction) {
  return reduction.is<VarMeanOp>() ? 24 : 8;  // Welford: mean, m2, count
}

std::vector<int64_t> column_partial_offsets(
    const ReductionAnalysis& analysis,
    int64_t partial_rows,
    int64_t width) {
  std::vector<int64_t> offsets{0};
  for (const Expr* r : analysis.outer_reductions) {
    // The accumulator: float for the half types, else the result's type.
    const int64_t element = std::max<int64_t>(4, size_in_bytes(r->output(0)->dtype()));
    const int64_t bytes = partial_rows * width * element;
    offsets.push_back(offsets.back() + ceil_div(bytes, 64) * 64);
  }
  return offsets;
}

std::string ReductionParams::to_string() const {
  std::ostringstream ss;
  ss << "ReductionParams(" << (outer ? "outer" : "inner")
     << ", row_rank=" << row_rank << ", vector_width=" << vector_width
     << ", block=" << block_size;
  if (outer) {
    ss << " (" << block_x << "x" << block_y << ")";
  } else {
    ss << ", threads_per_row=" << threads_per_row
       << ", groups_per_thread=" << groups_per_thread
       << (persistent ? ", persistent" : ", chunked");
  }
  ss << (split ? ", split" : "") << (inner_outer ? ", inner_outer" : "")
     << (pipelined ? ", pipelined" : "")
     << (carry_exps ? ", carry_exps" : "")
     << (late_draws ? ", late_draws" : "")
     << (staged ? ", staged" : "")
     << (hold_columns ? ", hold_columns" : "")
     << (cluster > 1 ? ", cluster=" + std::to_string(cluster) : std::string())
     << (partial_cluster > 1 ? ", partial_cluster=" + std::to_string(partial_cluster)
                             : std::string())
     << (min_blocks_per_sm > 0 ? ", min_blocks=" + std::to_string(min_blocks_per_sm)
                               : std::string())
     << ", index=" << (index_32bit ? "int32" : "int64")
     << ", access=";
  for (InnerAccess a : access) {
    ss << (a == InnerAccess::kContiguous ? "c" : a == InnerAccess::kBroadcast ? "b" : "s");
  }
  ss << ")";
  return ss.str();
}

bool ReductionParams::operator==(const ReductionParams& o) const {
  return outer == o.outer && row_rank == o.row_rank &&
      vector_width == o.vector_width && block_size == o.block_size &&
      threads_per_row == o.threads_per_row &&
      groups_per_thread == o.groups_per_thread && persistent == o.persistent &&
      block_x == o.block_x && block_y == o.block_y && split == o.split &&
      inner_outer == o.inner_outer && pipelined == o.pipelined &&
      cluster == o.cluster && partial_cluster == o.partial_cluster &&
      carry_exps == o.carry_exps && late_draws == o.late_draws &&
      staged == o.staged &&
      hold_columns == o.hold_columns &&
      min_blocks_per_sm == o.min_blocks_per_sm &&
      index_32bit == o.index_32bit && access == o.access;
}

std::optional<ReductionSchedule> schedule_reduction(
    const ReductionAnalysis& analysis,
    const std::vector<int64_t>& reference_sizes,
    const std::vector<TensorArg>& inputs,
    const std::vector<TensorArg>& outputs,
    const std::vector<TensorArg>& positions,
    const DeviceInfo& device,
    const ReductionTuning& tuning) {
  std::vector<TensorArg> tensors = inputs;
  tensors.insert(tensors.end(), outputs.begin(), outputs.end());
  std::vector<const TensorView*> views(analysis.inputs.begin(), analysis.inputs.end());
  const std::vector<const TensorView*> kernel_outputs = analysis.kernel_outputs();
  views.insert(views.end(), kernel_outputs.begin(), kernel_outputs.end());
  const auto is_column_output = [&](size_t t) {
    return t >= inputs.size() + analysis.outputs.size();
  };
  const int rank = analysis.rank;

  // Per tensor, its stride along each reference axis (0 where it has none).
  std::vector<std::vector<int64_t>> strides(tensors.size(), std::vector<int64_t>(rank, 0));
  std::vector<bool> per_element(tensors.size());
  for (size_t t = 0; t < tensors.size(); ++t) {
    const std::vector<int>& map = analysis.axis_map.at(views[t]);
    for (size_t i = 0; i < map.size(); ++i) {
      if (map[i] >= 0 && tensors[t].sizes[i] != 1) {
        strides[t][map[i]] = tensors[t].strides[i];
      }
    }
    // Column outputs are written by the finishing kernel only.
    per_element[t] = !analysis.is_per_row(views[t]) && !is_column_output(t);
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
  // The main tensor sets the walking order: the largest per-element input,
  // or the first per-element output when no input varies along the reduced
  // axes.
  int main_tensor = -1;
  int64_t main_bytes = -1;
  for (size_t t = 0; t < tensors.size(); ++t) {
    if (!per_element[t]) {
      continue;
    }
    if (t >= inputs.size() && main_tensor >= 0) {
      break;
    }
    int64_t bytes = size_in_bytes(tensors[t].dtype);
    for (int64_t s : tensors[t].sizes) {
      bytes *= s;
    }
    if (bytes > main_bytes) {
      main_tensor = static_cast<int>(t);
      main_bytes = bytes;
    }
  }
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
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return main_strides[a] > main_strides[b];
  });
  std::vector<int> kept;
  std::vector<int> reduced;
  for (int axis : order) {
    (analysis.reduced[axis] ? reduced : kept).push_back(axis);
  }
  const MergedAxes rows = merge(kept, reference_sizes, strides);
  const MergedAxes cols = merge(reduced, reference_sizes, strides);
  if (cols.extents.size() > 1) {
    return std::nullopt;  // the reduced axes are not one strided axis
  }

  ReductionSchedule schedule;
  ReductionSpace& space = schedule.space;
  space.row_extents = rows.extents.empty() ? std::vector<int64_t>{1} : rows.extents;
  space.row_strides = rows.strides;
  for (auto& s : space.row_strides) {
    if (s.empty()) {
      s.push_back(0);
    }
  }
  for (size_t axis = 0; axis < reduced.size(); ++axis) {
    space.width *= reference_sizes[reduced[axis]];
  }
  for (int64_t e : space.row_extents) {
    space.rows *= e;
  }
  for (size_t t = 0; t < strides.size(); ++t) {
    space.col_strides.push_back(cols.extents.empty() ? 0 : cols.strides[t][0]);
  }

  ReductionParams& p = schedule.params;
  p.row_rank = static_cast<int>(space.row_extents.size());
  p.index_32bit = fits_32bit(space);
  const bool main_inner =
      main_tensor < 0 || space.col_strides[main_tensor] == 1 || space.width <= 1;
  const bool main_outer_contiguous =
      main_tensor >= 0 && space.row_strides[main_tensor].back() == 1;
  p.outer = !main_inner && main_outer_contiguous && analysis.last_element_phase == 0 &&
      !analysis.has_row_gather();
  if (analysis.has_outer_reductions() && !main_inner) {
    return std::nullopt;  // inner-outer walks rows; the segments take it
  }
  if (space.rows == 0 && !analysis.has_outer_reductions()) {
    return schedule;  // grid_x = 0: nothing to do
  }

  int64_t slots_bytes = 0;
  for (const Expr* r : analysis.reductions) {
    slots_bytes += partial_slot_bytes(*r);
  }
  const int64_t wanted_blocks = 2 * static_cast<int64_t>(device.sm_count);

  bool masked_late_draws = false;  // see the inner rows' groups below
  if (p.outer) {
    std::vector<std::vector<int64_t>> other(tensors.size());
    for (size_t t = 0; t < tensors.size(); ++t) {
      p.access.push_back(inner_access_of(space.row_strides[t].back()));
      other[t].assign(space.row_strides[t].begin(), space.row_strides[t].end() - 1);
      other[t].push_back(space.col_strides[t]);
    }
    std::vector<bool> drives = per_element;
    for (size_t t = inputs.size(); t < tensors.size(); ++t) {
      drives[t] = false;
    }
    p.vector_width = vector_width_for(
        tensors, std::vector<bool>(tensors.size(), true), drives, p.access,
        space.row_extents.back(), other);
    const int64_t groups = space.rows / p.vector_width;
    p.block_x = static_cast<int>(std::min<int64_t>(32, next_pow2(groups)));
    p.block_y = (analysis.has_variance() ? kOuterWelfordBlock : kOuterBlock) / p.block_x;
    p.block_size = p.block_x * p.block_y;
    schedule.grid_x = ceil_div(groups, p.block_x);
    schedule.max_grid_y = std::clamp<int64_t>(
        space.width / (p.block_y * tuning.outer_rows), 1, 65535);
    // Outer walks keep one 16-byte load per thread in flight per row step:
    // twice the blocks of the inner kernels. But column blocks that alone
    // put one on every SM walk unsplit: the runtime splits in two at
    // least, which past one wave left a second wave's tail, and the
    // combine costs a few microseconds. H100, % of copy bandwidth, split
    // -> unsplit: bf16 sums over 2048 / 4096 / 16384 rows of 65536 (256
    // column blocks) 92 -> 98, 95 -> 100, 97 -> 102, 8192 rows of 40960
    // (160) 96 -> 100, of 34816 (136) 95 -> 97, of 32768 (128) 98 -> 97;
    // fp32 over 4096 of 32768 97 -> 100.
    // A variance's blocks are half the threads and were not measured so.
    const bool fills_every_sm = !analysis.has_variance() && schedule.grid_x >= device.sm_count;
    schedule.grid_y = fills_every_sm
        ? 1
        : std::clamp<int64_t>(ceil_div(2 * wanted_blocks, schedule.grid_x), 1,
                              schedule.max_grid_y);
    if (schedule.grid_y > 1) {
      const OuterClusterShape cluster =
          outer_split_cluster_shape(analysis, groups, space.width, device);
      if (cluster.blocks > 1) {
        p.cluster = cluster.blocks;
        p.block_x = cluster.block_x;
        p.block_y = cluster.block_size / cluster.block_x;
        p.block_size = cluster.block_size;
        schedule.grid_x = cluster.grid_x;
        schedule.grid_y = 1;
      }
    }
  } else {
    for (size_t t = 0; t < tensors.size(); ++t) {
      p.access.push_back(
          per_element[t] ? inner_access_of(space.col_strides[t]) : InnerAccess::kBroadcast);
    }
    p.vector_width = vector_width_for(
        tensors, per_element, per_element, p.access, space.width, space.row_strides);
    const int64_t groups = std::max<int64_t>(1, ceil_div(space.width, p.vector_width));
    bool writes_elements = false;
    for (size_t t = inputs.size(); t < tensors.size(); ++t) {
      writes_elements = writes_elements || per_element[t];
    }
    // Bytes of row-varying inputs a thread holds per vector group.
    int64_t held_bytes_per_group = 0;
    int held_tensors = 0;
    bool holds_only_half_types = true;
    // Staged rows (ReductionParams::staged) copy each held group whole:
    // contiguous vectors of 4, 8 or 16n bytes (cp.async's sizes). Rows
    // that phases read again only, and only on sm_90 (the cluster rows').
    // tuning.staging 1 stages some cluster rows (below); 2 every row it can.
    bool stageable = tuning.staging > 0 && device.arch >= 90 && analysis.last_element_phase > 0;
    for (size_t t = 0; t < inputs.size(); ++t) {
      // What the kernel holds (ReductionGenerator::held): by the fusion's
      // axes, not this call's strides (a single row's are all 0).
      if (per_element[t] && !analysis.is_per_column(analysis.inputs[t])) {
        const int width = p.access[t] == InnerAccess::kBroadcast ? 1 : p.vector_width;
        const int64_t group_bytes = width * size_in_bytes(tensors[t].dtype);
        held_bytes_per_group += group_bytes;
        ++held_tensors;
        holds_only_half_types = holds_only_half_types && size_in_bytes(tensors[t].dtype) <= 2;
        stageable = stageable && p.access[t] == InnerAccess::kContiguous &&
            (group_bytes % 16 == 0 || group_bytes == 4 || group_bytes == 8);
      }
    }
    // A staged inner-outer thread's partials are vectors of plain values (a
    // Welford state has no vector type).
    stageable = stageable && held_tensors > 0 &&
        std::none_of(analysis.outer_reductions.begin(), analysis.outer_reductions.end(),
                     [](const Expr* r) { return r->is<VarMeanOp>(); });
    // Inner-outer rows (the backward norms) staged keep their column
    // partials in registers instead of shared memory. H100, % of copy
    // bandwidth, unstaged -> staged: layer-norm backward bf16
    // 4096x65536 64 -> 77 (clusters of 8 blocks of 512 threads, two blocks
    // an SM), 32768x8192 79 -> 85; but fp32 88 -> 87 and 96 -> 96, and
    // RMS-norm backward (one column reduction) bf16 84 -> 76, fp32 90 -> 82.
    const bool stages_inner_outer =
        stageable && analysis.outer_reductions.size() >= 2 && holds_only_half_types;
    // Random values in rows of half types: see ReductionParams::late_draws.
    const bool draws_random = std::any_of(
        analysis.position_tensors.begin(), analysis.position_tensors.end(),
        [](const TensorView* tv) { return tv->definition()->is<RngOp>(); });
    const bool half_random_rows = draws_random && holds_only_half_types;
    // The threads a row takes at `row_elements` a thread.
    const auto row_threads = [&](int64_t row_elements) {
      return next_pow2(ceil_div(groups, std::max<int64_t>(1, row_elements / p.vector_width)));
    };
    // Half types in 16-byte groups: a lane of a narrower group (an odd
    // width) takes a register of its own, not half of one.
    const bool half_vectors = holds_only_half_types && p.vector_width >= 8;
    // Rows of half types that write nothing per element but hold their row
    // for a later phase (cross-entropy forward bf16, a loss per row) once
    // took twice the elements a thread (82 -> 85% of copy bandwidth at
    // 4096x8192 then), as pure reductions (sum, var_mean) did; since the
    // packed row max the usual 16 measure faster: cross-entropy forward
    // bf16 64 MB 26.30 -> 26.11 us (H100). A
    // loss row's time past a bare read of its bytes is the last rows' math
    // after their loads arrive, which half the elements a thread halves.
    // Inner-outer rows holding a type wider than 2 bytes (the unstaged fp32
    // backward norms) that one block holds at a quarter of the elements a
    // thread take that (one 16-byte fp32 group at the default 16): twice to
    // four times the threads walk the rows at about half the registers,
    // where the blocks walking the rows (at most one wave, a partial row
    // each) had left the SMs underfilled. H100, % of copy bandwidth, 16 -> 4
    // elements (tools/tune_reduction.py): RMS-norm backward
    // fp32 2048x1600 47 -> 64, 2048x4096 73 -> 88, 8192x4096 93 -> 96,
    // 16384x1600 91 -> 96; layer-norm backward fp32 42 -> 53, 65 -> 71, 86
    // -> 91, 86 -> 90. Rows of 8192 (2048 threads at 4) keep 16: the other
    // shape cost layer norm 96 -> 93. bf16 RMS-norm backward measured mixed
    // (1600: 33 -> 37, 4096: 54 -> 51, 32768x8192: 93 -> 84) and keeps 16.
    const int64_t quarter_elements = std::max<int64_t>(1, tuning.elements_per_thread / 4);
    const bool quarter_rows = analysis.has_outer_reductions() && !holds_only_half_types &&
        row_threads(quarter_elements) <= tuning.max_persistent_threads;
    // Inner-outer rows of half types with one column reduction (RMS-norm
    // backward bf16; never staged) take half the elements a thread where
    // the row then takes at most kMaxHalfElementRowThreads threads. H100,
    // % of copy bandwidth, 16 -> 8 elements (with partial clusters where
    // they apply): 2048x1600 32 -> 38, 16384x1600 81 -> 90;
    // not taken: 2048x4096 55 -> 53, 8192x4096 91 -> 93, 32768x8192 95 ->
    // 85 (1024 threads a row).
    const int64_t half_elements = std::max<int64_t>(1, tuning.elements_per_thread / 2);
    const bool half_element_rows = analysis.outer_reductions.size() == 1 &&
        holds_only_half_types && row_threads(half_elements) <= kMaxHalfElementRowThreads;
    const int64_t elements = quarter_rows ? quarter_elements
        : half_element_rows ? half_elements
        : tuning.elements_per_thread;
    // Rows that one block of at most kMaxLateDrawBlock threads holds and
    // that read their random values after phase 0 draw late at the full
    // elements per thread; the others take half the elements (their unit
    // words are drawn with the loads), as measured before late draws
    // (attention prologue bf16 16 -> 8 elements early: 59 ->
    // 63; dropout + layer norm the same).
    const bool draws_late = half_random_rows && !analysis.has_outer_reductions() &&
        row_threads(elements) <= std::min<int64_t>(tuning.max_persistent_threads,
                                                   kMaxLateDrawBlock) &&
        analysis.first_random_read_phase() > 0;
    // Late-drawing rows with a masked fill (a causal softmax, then dropout)
    // skip the draws of their filled groups (codegen/skipped_draws.cpp):
    // with Philox off about half the row, twice the elements a thread keep
    // more loads in flight, and a 1024-wide row is one warp's. H100, % of
    // copy bandwidth, attention prologue bf16 16 -> 32 elements: 64 MB 78
    // -> 88, 256 MB 86 -> 98 (fp32 rows draw early: 102 either way).
    masked_late_draws = draws_late && !analysis.masked_choices().empty();
    const int64_t max_groups = std::max<int64_t>(
        1, elements * (masked_late_draws ? 2 : 1) / (half_random_rows && !draws_late ? 2 : 1) /
            p.vector_width);
    // Staged inner-outer rows that one block holds at one vector group a
    // thread take that: twice the threads walk the rows' copies, and the
    // half as many blocks write half the partial rows. H100, % of copy
    // bandwidth, 2 -> 1 group: layer-norm backward bf16
    // 8192x4096 61 -> 72, 32768x8192 88 -> 91, 2048x1600 30 -> 29. Not
    // below kShortRowBlock threads (a block of a warp per row).
    const bool one_group_rows = stages_inner_outer && next_pow2(groups) >= kShortRowBlock &&
        next_pow2(groups) <= tuning.max_persistent_threads;
    int64_t lanes = next_pow2(ceil_div(groups, one_group_rows ? 1 : max_groups));
    p.persistent = lanes <= tuning.max_persistent_threads;
    // A row too long for one block that phases would re-read: held by a
    // cluster of blocks instead.
    // With outer reductions too (layer-norm backward at 65536), the
    // cluster's blocks walk rows together, each accumulating the column
    // partials of its own chunk.
    bool staged_cluster = false;
    if (!p.persistent && analysis.last_element_phase > 0 && device.arch >= 90) {
      // 16 blocks (rows of 262144) only without a variance, as measured on
      // the H100 at 512 x 262144 (% of copy bandwidth, chunked -> 16
      // blocks): log-softmax fp32 49 -> 64, bf16 49 -> 62; softmax fp32 48
      // -> 62, bf16 48 -> 53; softmax backward bf16 59 -> 78; RMS norm bf16
      // 63 -> 72; but layer norm fp32 63 -> 54, bf16 57 -> 55: there the
      // chunked kernel, which re-reads the row, beats a 16-SM cluster at
      // one block per SM. Layer-norm backward's row kernel (then two
      // cluster barriers per row, one per sum) measured 39 -> 33; its sums
      // now pass the cluster together (reduce_together), and its column
      // sums join the row kernel (inner-outer), which no longer re-reads.
      // Staged cluster rows take 16 blocks with a variance too: their next
      // row's copies keep the SM loading while a block waits at the
      // cluster barrier. Staged inner-outer rows take one `max_groups` a
      // thread where 16 blocks hold that, whose column partials are
      // registers per held column (layer-norm backward bf16 4096x65536: 4
      // blocks of 512 threads at twice the groups, one block an SM, 68-70%
      // of copy bandwidth; 8 blocks of 512, two an SM, 74-77); at 262144,
      // 16 blocks of twice the groups (53 -> 67 staged).
      std::optional<ClusterShape> staged_shape;
      if (analysis.has_outer_reductions()) {
        staged_shape = cluster_for_row(groups, max_groups, held_bytes_per_group,
                                       tuning.max_cluster, DoubleGroups::kNever, tuning);
      }
      // Rows of half types without a variance that write per element take
      // clusters of twice the groups a thread (32 elements, half the
      // blocks) where the cluster holds the row at the usual groups too.
      // H100, % of copy bandwidth, 16 -> 32 elements
      // (tools/tune_reduction.py): softmax
      // bf16 4096x65536 89-90 -> 93 (staged, 4 -> 2 blocks), 512x262144 88
      // -> 91 (16 -> 8); log-softmax 90 -> 93-94 and 89 -> 92; RMS norm
      // 512x262144 90 -> 92-93 (8 blocks, 63 registers), at 65536 95
      // either way; softmax backward 101 -> 102, 99 -> 99. Layer norm
      // (a variance) at 262144 spilled and fell 83 -> 60.
      const bool wider_clusters = half_vectors && writes_elements && !analysis.has_variance() &&
          !analysis.has_outer_reductions() && !draws_random;
      const auto cluster_shape = [&](int max_blocks, DoubleGroups doubling) {
        std::optional<ClusterShape> shape = cluster_for_row(
            groups, max_groups, held_bytes_per_group, max_blocks, doubling, tuning);
        if (shape.has_value() && wider_clusters) {
          if (auto wider = cluster_for_row(groups, 2 * max_groups, held_bytes_per_group,
                                           max_blocks, doubling, tuning)) {
            shape = wider;
          }
        }
        return shape;
      };
      if (!staged_shape.has_value()) {
        staged_shape = cluster_shape(tuning.max_cluster, DoubleGroups::kAlways);
      }
      const std::optional<ClusterShape> unstaged_cluster = cluster_shape(
          analysis.has_variance() ? std::min(8, tuning.max_cluster) : tuning.max_cluster,
          DoubleGroups::kFromEightBlocks);
      // Staging pays where a row waits at two cluster reductions or more
      // (a variance: its sum, then its squared deviations) and the cluster
      // without it holds its row poorly. H100, % of copy bandwidth, cluster
      // (or chunked) -> staged: at 4096x65536 layer norm bf16 82 -> 86,
      // softmax bf16 88 -> 92, bias + residual + layer norm bf16 66 -> 71,
      // fp32 61 -> 74 (two held inputs: half the elements a block); at
      // 512x262144 (16 blocks, or chunked) layer norm bf16 60 -> 84, fp32
      // 62 -> 75, softmax bf16 81 -> 89, fp32 90 -> 95, log-softmax bf16
      // 82 -> 89, fp32 90 -> 95. It costs the rows of one reduction (RMS
      // norm bf16 at 262144 90 -> 86, softmax backward bf16 99 -> 86, at
      // 65536 101 -> 88) and fp32 rows of 8 blocks (layer norm 92 -> 87,
      // softmax 96 -> 91): its buffers take the shared memory that the
      // per-column values' L1 and the occupancy had.
      const int reduction_rounds =
          analysis.last_element_phase + (analysis.has_variance() ? 1 : 0);
      const bool staging_pays = staged_shape.has_value() &&
          (analysis.has_outer_reductions()
               ? stages_inner_outer
               : reduction_rounds >= 2 &&
                   (holds_only_half_types || held_tensors >= 2 ||
                    !unstaged_cluster.has_value() || staged_shape->blocks == 16));
      staged_cluster =
          stageable && staged_shape.has_value() && (tuning.staging == 2 || staging_pays);
      if (auto cluster = staged_cluster ? staged_shape : unstaged_cluster) {
        p.cluster = cluster->blocks;
        p.persistent = true;
        lanes = cluster->lanes;
      }
    }
    int64_t chunk_max_groups = max_groups;
    if (!p.persistent) {
      lanes = tuning.chunked_threads;
      // A chunked row of phases streams at most kMaxChunkedRowBytes of its
      // held inputs a thread per chunk: 1024-thread blocks get 64
      // registers, and bias + residual + layer norm fp32 at 262144 (two
      // fp32 inputs, 128 bytes) spilled 44 bytes.
      if (analysis.last_element_phase > 0 && held_bytes_per_group > 0) {
        chunk_max_groups = std::clamp<int64_t>(
            kMaxChunkedRowBytes / held_bytes_per_group, 1, max_groups);
      }
      // A row of at most two 1024-thread chunks spends a large share of
      // its time in its final block reduction, and a 1024-thread block
      // (one an SM above 32 registers) leaves its SM nothing loading
      // meanwhile: 512 threads, two blocks an SM. H100, % of copy
      // bandwidth, 1024 -> 512: var_mean bf16 4096x65536 89 -> 100 (fp32
      // and sums there 102-104 either way); longer rows amortize the
      // reduction and lose (layer norm bf16 512x262144 63 -> 57).
      if (lanes > kShortChunkThreads && groups <= 2 * lanes * chunk_max_groups) {
        lanes = kShortChunkThreads;
      }
      // Streamed inner-outer rows hold at most kMaxStreamedColumnElements
      // of each input a chunk: layer-norm backward bf16 at two groups of 8
      // (1024 threads, 64 registers) spilled 16 bytes.
      const int64_t streamed_groups =
          analysis.has_outer_reductions()
          ? std::min<int64_t>(chunk_max_groups,
                              std::max<int64_t>(1, kMaxStreamedColumnElements / p.vector_width))
          : chunk_max_groups;
      p.cluster = streamed_cluster_blocks(analysis, groups,
                                          tuning.chunked_threads * streamed_groups,
                                          held_bytes_per_group, device, tuning);
      if (p.cluster > 1) {
        chunk_max_groups = streamed_groups;
        lanes = tuning.chunked_threads;
      }
    }
    const int64_t rows_per_block = lanes >= 32 ? 1 : kShortRowBlock / lanes;
    schedule.grid_x = ceil_div(space.rows, rows_per_block) * p.cluster;
    // Few rows and nothing per element after the reductions: split each row
    // over several blocks.
    const int64_t chunk_groups = lanes * max_groups;
    if (analysis.last_element_phase == 0 && schedule.grid_x < device.sm_count &&
        groups >= 2 * chunk_groups && lanes >= 32 && !analysis.has_outer_reductions()) {
      p.persistent = false;
      lanes = std::min<int64_t>(tuning.chunked_threads, lanes);
      const int64_t chunks = ceil_div(groups, lanes * max_groups);
      schedule.grid_y = std::min<int64_t>(
          {chunks, ceil_div(wanted_blocks, schedule.grid_x), 65535});
    }
    p.threads_per_row = static_cast<int>(lanes);
    p.groups_per_thread = static_cast<int>(
        p.persistent ? ceil_div(groups, lanes * p.cluster) : chunk_max_groups);
    p.block_size = static_cast<int>(lanes >= 32 ? lanes : kShortRowBlock);
    p.late_draws = draws_late && p.persistent && p.cluster == 1;
    schedule.rows_per_block = rows_per_block;
    // A staged inner-outer thread keeps its columns' partial results in
    // registers, kMaxColumnPartialBytes at most.
    int64_t column_partial_bytes = 0;
    for (const Expr* r : analysis.outer_reductions) {
      column_partial_bytes += int64_t{p.groups_per_thread} * p.vector_width *
          std::max<int64_t>(4, size_in_bytes(r->output(0)->dtype()));
    }
    p.staged = stageable && p.persistent && schedule.grid_y == 1 &&
        (tuning.staging == 2 || staged_cluster || (p.cluster == 1 && stages_inner_outer)) &&
        column_partial_bytes <= kMaxColumnPartialBytes;
    if (analysis.has_outer_reductions()) {
      // The row must stay in registers or staged rows' shared memory (each
      // thread owns the same columns in every row), and an unstaged
      // block's column partials fit in shared memory.
      p.inner_outer = true;
      // A cluster's block keeps the partials of its part of the row: one
      // chunk held, or the chunks it streams.
      const int64_t chunk_columns = p.groups_per_thread * lanes * p.vector_width;
      const int64_t block_columns = p.cluster == 1 ? space.width
          : p.persistent ? chunk_columns
                         : ceil_div(ceil_div(space.width, chunk_columns), p.cluster) * chunk_columns;
      schedule.shared_bytes = p.staged
          ? 0
          : column_partial_offsets(analysis, rows_per_block, block_columns).back();
      if ((!p.persistent && p.cluster == 1) ||
          schedule.shared_bytes > kMaxInnerOuterSharedBytes ||
          space.rows == 0) {
        return std::nullopt;
      }
    }
    const int64_t held_bytes = p.groups_per_thread * held_bytes_per_group;
    p.pipelined = tuning.pipelining > 0 && p.persistent && !p.inner_outer && !p.staged &&
        schedule.grid_y == 1 && p.cluster == 1 && held_bytes > 0 &&
        held_bytes <= kMaxPipelinedBytes && schedule.grid_x > device.sm_count &&
        (tuning.pipelining == 2 ||
         (schedule.grid_x >= kLeastPipelinedRowGroups * device.sm_count &&
          holds_only_half_types && held_tensors >= 2 && analysis.has_variance()));
    if (p.staged) {
      schedule.shared_bytes = 2 * p.block_size * p.groups_per_thread * held_bytes_per_group;
      // Per-column inputs held in registers, up to kMaxHeldColumnBytes a
      // thread, in blocks of at most 512 threads (1024 get 64 registers:
      // layer-norm backward bf16 at 16384 spilled): where the buffers leave
      // one block an SM anyway, where staging is forced, and in inner-outer
      // rows walked by one block (γ is then read once a block, not once a
      // row: H100, layer-norm backward bf16 8192x4096 85 -> 91% of copy
      // bandwidth, 16384x1600 78 -> 87, 2048x1600 36 -> 39, no spills).
      int64_t column_bytes = 0;
      bool columns_contiguous = true;
      for (size_t t = 0; t < inputs.size(); ++t) {
        if (per_element[t] && analysis.is_per_column(analysis.inputs[t])) {
          column_bytes +=
              p.groups_per_thread * p.vector_width * size_in_bytes(tensors[t].dtype);
          columns_contiguous = columns_contiguous && p.access[t] == InnerAccess::kContiguous;
        }
      }
      p.hold_columns = column_bytes > 0 && columns_contiguous &&
          column_bytes <= kMaxHeldColumnBytes && p.block_size <= kMaxColumnHolderBlock &&
          (2 * schedule.shared_bytes > kSharedBytesPerSm ||
           (tuning.staging == 2 && !p.inner_outer) || (p.inner_outer && p.cluster == 1));
    }
    if (p.inner_outer && p.cluster > 1) {
      p.min_blocks_per_sm = cluster_blocks_per_sm(p.block_size, schedule.shared_bytes);
    }
    if (p.inner_outer && p.cluster == 1) {
      // Staged rows put their register partials into the staged buffers,
      // done with after the walk: those must hold them.
      const int64_t partial_shared_bytes = !p.staged ? schedule.shared_bytes
          : std::max(schedule.shared_bytes,
                     column_partial_offsets(analysis, 1, int64_t{p.groups_per_thread} *
                                                             p.block_size * p.vector_width)
                         .back());
      p.partial_cluster = partial_cluster_blocks(analysis, p, space.rows, partial_shared_bytes,
                                                 holds_only_half_types, device);
      if (p.partial_cluster > 1) {
        schedule.shared_bytes = partial_shared_bytes;
      }
    }
  }
  // Split rows are chunked, so `persistent` excludes them too.
  p.carry_exps = tuning.carry_exps > 0 && !p.outer && p.persistent && !p.inner_outer &&
      p.cluster == 1 && !analysis.exps_read_again().empty();
  if (p.late_draws && p.carry_exps) {
    p.min_blocks_per_sm =
        (masked_late_draws ? kMaskedLateDrawRegisterBlocks : kLateDrawRegisterBlocks) /
        p.block_size;
  }
  p.split = schedule.grid_y > 1;
  if (p.split) {
    schedule.workspace_bytes = schedule.grid_y * space.rows * slots_bytes;
  }
  return schedule;
}

}  // namespace nvfuse
