// Outer reductions (the kept axis is contiguous: sum over dim 0, dgamma):
// threads own vectors of adjacent columns and walk down the rows; the rows
// split over several blocks (or a cluster's blocks) when the column blocks
// alone cannot fill the GPU.
#include <algorithm>

#include "schedule/cluster_shapes.h"
#include "schedule/reductions/reduction_tactics.h"

namespace nvfuse {

namespace {

// Outer blocks: 512 threads (16 rows of 32 threads; a bf16 sum's kernel at
// 40 registers, 3 an SM) where 256 (8 rows) split a reduction over twice
// the blocks, whose partial rows the last block combines: a bf16 sum over
// 8192 rows of 4096 (H100, % of copy bandwidth) 62 -> 71. Welford states
// (a variance) keep 256: their kernels take about 80 registers, at which
// an SM holds one block of 512 threads but three of 256.
constexpr int kOuterBlock = 512;
constexpr int kOuterWelfordBlock = 256;

// Vectors along the innermost kept axis, sized by the inputs read per
// element.
void choose_column_vectors(ReductionWalk& walk) {
  ReductionParams& p = walk.schedule.params;
  const ReductionSpace& space = walk.schedule.space;
  std::vector<std::vector<int64_t>> other(walk.tensors.size());
  for (size_t t = 0; t < walk.tensors.size(); ++t) {
    p.access.push_back(inner_access_of(space.row_strides[t].back()));
    other[t].assign(space.row_strides[t].begin(), space.row_strides[t].end() - 1);
    other[t].push_back(space.col_strides[t]);
  }
  std::vector<bool> drives = walk.per_element;
  for (size_t t = walk.input_count; t < walk.tensors.size(); ++t) {
    drives[t] = false;
  }
  p.vector_width = vector_width_for(walk.tensors, std::vector<bool>(walk.tensors.size(), true),
      drives, p.access, space.row_extents.back(), other);
}

// Outer walks keep one 16-byte load per thread in flight per row step:
// twice the blocks of the inner kernels. But column blocks that alone put
// one on every SM walk unsplit: the runtime splits in two at least, which
// past one wave left a second wave's tail, and the combine costs a few
// microseconds. H100, % of copy bandwidth, split -> unsplit: bf16 sums over
// 2048 / 4096 / 16384 rows of 65536 (256 column blocks) 92 -> 98, 95 ->
// 100, 97 -> 102, 8192 rows of 40960 (160) 96 -> 100, of 34816 (136) 95 ->
// 97, of 32768 (128) 98 -> 97; fp32 over 4096 of 32768 97 -> 100. A
// variance's blocks are half the threads and were not measured so.
int64_t row_splits(const ReductionAnalysis& analysis, const ReductionSchedule& schedule,
    const DeviceInfo& device) {
  const bool fills_every_sm = !analysis.has_variance() && schedule.grid_x >= device.sm_count;
  if (fills_every_sm) {
    return 1;
  }
  return std::clamp<int64_t>(
      ceil_div(2 * wanted_blocks(device), schedule.grid_x), 1, schedule.max_grid_y);
}

// A thread's registers in the outer walk, estimated in 32-bit words: a base
// of indices and loop state, each tensor's offset, each per-row input held
// through the walk, each reduction's kVec accumulators (a Welford state is
// three words), and the loads of a batch's row steps in flight. Many
// independent column sums in one kernel (a transformer backward's bias
// gradients, grouped at the graph's end) hold a set of these per input: with
// 20 bf16 inputs at kVec 8 and 4 row steps a batch, NVRTC's ptxas spilled
// 17 KB a thread under the 512-thread block's 128-register cap.
constexpr int kBaseRegisters = 14;

int64_t words_of(int vector_width, DataType dtype) {
  return ceil_div(vector_width * size_in_bytes(dtype), 4);
}

int64_t estimated_registers(
    const ReductionAnalysis& analysis, const ReductionWalk& walk, int vector_width, int batch) {
  const ReductionParams& p = walk.schedule.params;
  int64_t words = kBaseRegisters;
  for (size_t t = 0; t < walk.tensors.size(); ++t) {
    words += p.index_32bit ? 1 : 2;
    if (t >= walk.input_count) {
      continue;
    }
    const int64_t loaded = words_of(vector_width, walk.tensors[t].dtype);
    words += walk.per_element[t] ? batch * loaded : loaded;
  }
  for (const Expr* r : analysis.reductions) {
    const int64_t element = std::max<int64_t>(4, size_in_bytes(r->output(0)->dtype())) / 4;
    words += vector_width * (r->is<VarMeanOp>() ? 3 * element : element);
  }
  return words;
}

// Registers the estimate may reach: the 512-thread block's cap. Against
// NVRTC's ptxas (sm_90, bf16): one and two sums at kVec 8, 40 and 64
// registers (estimated 40 and 66); ResNet-50's batch-norm backward
// kernels, 100 and 124 (101 and 120); 20 sums at kVec 2 and one row step,
// 113 (114). Four sums (118) took all 128 without spilling. A lower
// target cut the batch-norm kernels' row steps for no more blocks an SM.
// The fit comes before the cluster choice (which the column groups of the
// fitted vectors decide), so a cluster's 256-thread blocks, whose cap is
// 255, are fitted to 128 as well.
constexpr int64_t kOuterRegisterTarget = 128;

// Fewer row steps a batch, then narrower vectors, until the estimate fits
// (or both are down to one): every input's batch of loads still goes out
// before the math, and many inputs keep many loads in flight at any batch.
void fit_registers(const ReductionAnalysis& analysis, ReductionWalk& walk) {
  ReductionParams& p = walk.schedule.params;
  while (
      estimated_registers(analysis, walk, p.vector_width, p.outer_batch) > kOuterRegisterTarget) {
    if (p.outer_batch > 1) {
      p.outer_batch /= 2;
    } else if (p.vector_width > 1) {
      p.vector_width /= 2;
    } else {
      return;
    }
  }
}

}  // namespace

void schedule_outer_columns(const ReductionAnalysis& analysis, ReductionWalk& walk,
    const DeviceInfo& device, const ReductionTuning& tuning) {
  ReductionSchedule& schedule = walk.schedule;
  ReductionParams& p = schedule.params;
  const ReductionSpace& space = schedule.space;
  choose_column_vectors(walk);
  fit_registers(analysis, walk);
  const int64_t groups = space.rows / p.vector_width;
  p.block_x = static_cast<int>(std::min<int64_t>(32, next_pow2(groups)));
  p.block_y = (analysis.has_variance() ? kOuterWelfordBlock : kOuterBlock) / p.block_x;
  p.block_size = p.block_x * p.block_y;
  schedule.grid_x = ceil_div(groups, p.block_x);
  // Each thread walks at least ReductionTuning::outer_rows rows.
  schedule.max_grid_y =
      std::clamp<int64_t>(space.width / (p.block_y * tuning.outer_rows), 1, 65535);
  schedule.grid_y = row_splits(analysis, schedule, device);
  if (schedule.grid_y == 1) {
    return;
  }
  // Split rows over a cluster's blocks instead (kOuterCluster in
  // cluster_shapes.cpp), which combine through distributed shared memory.
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

}  // namespace nvfuse
