// The reduction scheduler's heuristics: from one call's sizes, strides and
// addresses, the 2-D problem (rows x reduced width) the kernel walks and the
// plain data (ReductionParams) the code generator consumes.
//
// Inner reductions (the reduced axis is contiguous in the main input: norms,
// softmax, sum over the last dim): lanes of a warp or a block share a row
// and load it in 16-byte vectors; a row that fits in registers is loaded once
// and kept there across phases (persistent); a longer one is re-read per
// phase in chunks (from L2 when the rows in flight fit there). Outer
// reductions (the kept axis is contiguous: sum over dim 0, dgamma): threads
// own vectors of adjacent columns and walk down the rows. Either splits the
// reduced axis over several blocks when rows alone cannot fill the GPU; the
// last block of a row group combines the partial results (in a fixed order,
// so results are deterministic).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "schedule/pointwise_params.h"
#include "schedule/reduction_analysis.h"
#include "schedule/tensor_arg.h"

namespace nvfuse {

struct ReductionParams {
  bool outer = false;
  int row_rank = 1;      // kept axes after merging
  int vector_width = 1;  // along the reduced axis (inner) / the innermost kept axis (outer)
  int block_size = 128;
  // Inner: lanes per row (at most 32: several rows per block; else the
  // block), vector groups per thread per chunk, and whether the row stays
  // in registers.
  int threads_per_row = 32;
  int groups_per_thread = 1;
  bool persistent = true;
  // Outer: threads along the columns (block_x) and down the rows, and the
  // row steps whose loads a thread issues together (outer_batch: all the
  // batch's loads are in flight before its math).
  int block_x = 32;
  int block_y = 1;
  int outer_batch = 4;
  // The reduced axis is split over gridDim.y blocks.
  bool split = false;
  // Inner-outer (ReductionAnalysis::outer_reductions): blocks walk rows
  // grid-stride, each thread accumulating its columns' outer reductions in
  // shared memory (staged: in registers); a second kernel combines the
  // blocks' partial rows.
  bool inner_outer = false;
  // Inner persistent rows, not split: a block walks rows grid-stride (one
  // wave of blocks) and loads its next row while the current one reduces,
  // so that the block reductions' latency hides behind loads in flight.
  bool pipelined = false;
  // Inner rows too long for one block's registers (sm_90): a thread block
  // cluster of this many blocks holds the row, each block a contiguous
  // part, and combines its reductions through distributed shared memory.
  // Chunked (not persistent) cluster rows are *streamed*: each block
  // re-reads its part in chunks per phase, and the few rows the GPU's
  // clusters walk at once stay in L2 between the phases (a block per row
  // walks so many rows at once that its re-reads come from DRAM).
  // Outer kernels: the reduced rows are split over the cluster's blocks,
  // which combine their results through distributed shared memory (see
  // kOuterCluster in schedule/cluster_shapes.cpp); `split` stays false.
  int cluster = 1;
  // Inner-outer rows that one block holds (no `cluster`), on sm_90: the
  // walking blocks launch in clusters of `partial_cluster` blocks, which
  // combine their column partials through distributed shared memory before
  // writing them (nvfuse::combine_cluster_partials): the kernel writes, and
  // the finishing kernel reads, 1 / partial_cluster of the partial rows.
  int partial_cluster = 1;
  // The launch's cluster: `cluster` or `partial_cluster`.
  int launch_cluster() const { return cluster > 1 ? cluster : partial_cluster; }
  // __launch_bounds__'s blocks per SM (0: not stated). Inner-outer cluster
  // rows state what their shared memory admits, so that ptxas fits their
  // registers to it: left to itself, NVRTC's ptxas capped a 512-thread
  // kernel at 64 registers and spilled (RMS-norm backward fp32 at 65536),
  // or took 83 and left one block per SM (layer-norm backward fp32).
  // Late-draw rows with carried exps state 64 registers a thread (see
  // late_draws).
  int min_blocks_per_sm = 0;
  // Persistent rows of one block (not inner-outer, not clusters): the exps
  // that a later phase reads again (ReductionAnalysis::exps_read_again:
  // softmax's exp(x - max), summed in one phase and divided by the sum in
  // the next) are kept in registers from the phase that computes them,
  // instead of computed again from the held inputs, which then die. H100,
  // % of copy bandwidth (tools/tune_reduction.py): attention prologue bf16
  // 59 -> 63 at 64 MB and 62 -> 67 at 256 MB, fp32 100 -> 103, softmax
  // bf16 2048x1600 63 -> 67, the other softmax rows within a point. A
  // cluster row's threads hold 32 elements, and the floats cost bf16
  // softmax at 512x262144 its occupancy (40 -> 49 registers, 81 -> 69).
  bool carry_exps = false;
  // Persistent rows of half types (one block of at most 512 threads) whose
  // random values a later phase reads (dropout after a softmax) draw them
  // there, not in phase 0 while the
  // row's loads are in flight: these rows are bound by issue, not memory
  // (the attention prologue bf16: Philox, the mask, two reductions, exp
  // and the dropout select at 2 bytes an element), and unit words drawn
  // early stay live across the phases' registers. They take the full
  // elements per thread (16), which the drawn words made cost too many
  // registers. H100, % of copy bandwidth at 64 / 256 MB
  // (tools/tune_reduction.py): 8 elements drawn early 66 / 71,
  // late 64 / 69; 16 elements early 69 / 73, late 70 / 76-77 (70
  // registers). fp32 rows (memory-bound) keep drawing early (late at 16
  // elements: 102 -> 100). Their random values must be first read after
  // phase 0 (dropout before a layer norm reads them in phase 0 and keeps
  // 8 elements, drawn with the loads). Those that carry their exps (whose
  // inputs die early) state 64 registers a thread as __launch_bounds__'s
  // blocks per SM (ptxas took 70 and fit 14 64-thread blocks an SM, 16 at
  // 64): 70 / 76 -> 72 / 78. A layer norm followed by dropout spilled 8
  // bytes at 64 and states none.
  bool late_draws = false;
  // Persistent rows (one block or a cluster): a wave of blocks (or
  // clusters) walks the rows, and each thread copies its groups
  // of the next row into shared memory (cp.async, two buffers) while the
  // current row computes from the other. The copies in flight hold no
  // registers (the register pipelining above doubles the held ones), so the
  // loads of the next row cover the current row's reductions and barriers.
  // schedule.shared_bytes holds the buffers. Staged inner-outer rows keep
  // each thread's column partials in registers instead of shared memory:
  // the row no longer takes them, and the buffers take the shared memory.
  bool staged = false;
  // Staged rows whose buffers leave their SM to one block: the per-column
  // inputs (weights, biases) are loaded into registers once, before the
  // walk (each thread owns the same columns in every row), instead of by
  // every phase of every row from L2 (the buffers take the L1's memory).
  // The registers are free there: one 512-thread block may take 128.
  bool hold_columns = false;
  bool index_32bit = true;
  // Plain persistent inner rows (one block a row or several rows a block;
  // no cluster, split, pipelining, staging, inner-outer or late draws) are
  // generated for a bucket of row widths, not for one: the kernel reads its
  // lanes per row from the launch (Args::lane_shift) and its block from
  // blockDim, holds the most vector groups a thread takes
  // (groups_per_thread, predicated past the row's end) and states
  // `launch_bound` as __launch_bounds__, which names the bucket: 128, rows
  // of at most a warp; 512, a block of 64 to 512 threads a row; 1024. Every
  // width of a bucket shares one kernel, so a new width compiles nothing
  // unless the vector width, the index width or the bucket changes
  // (schedule/reductions/width_buckets.cpp). threads_per_row and
  // block_size stay the launch's.
  bool width_generic = false;
  int launch_bound = 0;
  // Set at launch, not by the scheduler: the launch is recorded into a CUDA
  // graph and its random ops read torch's graph-safe generator state
  // (codegen/index_values.h).
  bool graph_rng = false;
  // One per kernel tensor (inputs, then outputs): its access along the
  // vectorized axis.
  std::vector<InnerAccess> access;

  // What the kernel is generated from: these params, with a width-generic
  // kernel's launch shape (threads_per_row, block_size) replaced by its
  // bucket (0 lanes, block_size = launch_bound). Kernels are keyed by it.
  ReductionParams kernel_params() const;
  // A chunked row that a cluster streams (see `cluster`).
  bool streamed() const { return cluster > 1 && !persistent; }
  std::string to_string() const;
  bool operator==(const ReductionParams& other) const;
};

struct ReductionSpace {
  int64_t rows = 1;
  int64_t width = 1;
  std::vector<int64_t> row_extents;               // outermost first
  std::vector<std::vector<int64_t>> row_strides;  // per kernel, then position, tensor
  std::vector<int64_t> col_strides;               // per kernel, then position, tensor
};

// The launch-shape choices the inner heuristics start from; exposed so that
// tuning runs can sweep them (nvfuse._C.set_reduction_tuning,
// tools/tune_reduction.py). From a sweep on an H100 (docs/reductions.md): 16
// elements per thread (fp32: 4 x 4, bf16: 2 x 8; registers grow with the
// elements, which are computed in float, not with their bytes: 32 bf16
// elements cost the occupancy that bf16 rows need), and 1024-thread chunks
// for rows too long for registers. Every field is part of the schedule's
// memo key (ReductionExecutor::schedule): a new one must be added there.
struct ReductionTuning {
  // Elements of the widest per-element tensor each thread holds per chunk
  // (at least one vector).
  int elements_per_thread = 16;
  // Longest row (in threads) kept in registers; longer rows are chunked.
  int max_persistent_threads = 1024;
  // Threads per row of a chunked (or split) row.
  int chunked_threads = 1024;
  // Pipelined rows (ReductionParams::pipelined): 0 never; 1 where the H100
  // measurements say it pays (schedule/reductions/pipelined_rows.cpp); 2 wherever it can.
  int pipelining = 1;
  // Most blocks of a cluster that holds a long row (1: long rows are
  // chunked and re-read per phase; 16 is non-portable, Hopper only).
  int max_cluster = 16;
  // ReductionParams::carry_exps: 0 never; 1 where it applies.
  int carry_exps = 1;
  // ReductionParams::staged: 0 never; 1 where the H100 measurements say it
  // pays (schedule/reductions/cluster_rows.cpp); 2 for every persistent row it can take.
  int staging = 1;
  // Blocks of a cluster that streams a row no cluster holds (see
  // ReductionParams::cluster; 1: such rows are chunked by one block).
  int streamed_cluster = 16;
  // Outer split reductions: the fewest rows each thread walks before the
  // rows split over more blocks (ReductionSchedule::max_grid_y). Each
  // split block writes partials that the last block to arrive combines;
  // over few rows that tail is what the kernel waits on. H100, % of copy
  // bandwidth (tools/tune_reduction.py): sum over 2048 rows of 1600 bf16
  // at 4 / 8: 12 /
  // 17; at 16 the normalization bench measured 14.8 against 16.8 at 8
  // (20 only with each thread's loads of 4 row steps issued together,
  // which cost bf16 sums over 32768 x 8192 and 512 x 262144 1-2 points);
  // over 8192 rows of 4096 bf16 63 at 8 and 16, 69 at 32. The large shapes
  // measured the same at every value.
  int outer_rows = 8;
  // ReductionParams::width_generic: 0 never (every width its own kernel);
  // 1 wherever it applies. Off by default: the kernels it shares cost
  // registers, and with them occupancy (H200, against each width's own
  // kernel: aligned widths 0.99-1.2x the time, bf16 layer norm 32768x8192
  // 1.2x at 40 instead of 32 registers; odd widths 1.3-2.2x, each thread
  // holding its bucket's most groups). It trades that for compiling 11
  // kernels instead of 54 over 64 widths (docs/reductions.md).
  int width_buckets = 0;
};

struct ReductionSchedule {
  ReductionSpace space;
  ReductionParams params;
  int64_t grid_x = 0;  // 0 when there is nothing to do
  int64_t grid_y = 1;
  // Outer split: the most blocks down the rows (each thread walks at least
  // ReductionTuning::outer_rows rows). The launch sizes grid_y from the
  // kernel's occupancy within it (ReductionExecutor::run).
  int64_t max_grid_y = 1;
  // Bytes of partial results for a split reduction (0 without a split).
  int64_t workspace_bytes = 0;
  // Inner-outer: dynamic shared memory per block (staged rows: their
  // buffers), and rows each block holds partial column results for.
  int64_t shared_bytes = 0;
  int64_t rows_per_block = 1;
};

// Inner-outer: where each outer reduction's partial rows start, for
// `partial_rows` rows of `width` columns (regions of the workspace and of
// shared memory, each 64-byte aligned); the last entry is the total.
std::vector<int64_t> column_partial_offsets(
    const ReductionAnalysis& analysis, int64_t partial_rows, int64_t width);

// The largest dynamic shared memory an inner-outer block asks for; wider
// rows fall back to one kernel per reduction class.
constexpr int64_t kMaxInnerOuterSharedBytes = 160 * 1024;

// Bytes one reduction's partial result takes in the split workspace.
int64_t partial_slot_bytes(const Expr& reduction);

// Outer split reductions combine their partial rows in groups of this many,
// then the groups' (codegen/outer_reduction_codegen.cpp).
constexpr int64_t kOuterSplitGroup = 32;

// The arrival counters a split launch of grid_x x grid_y blocks needs: one
// per column block (inner splits), or one per group and one for the groups
// (outer splits).
int64_t split_counters(const ReductionParams& params, int64_t grid_x, int64_t grid_y);

// `reference_sizes`: the extents of the analysis's reference tensor;
// `positions`: the sizes of analysis.position_tensors (their strides are
// not read). nullopt when the reduced axes cannot be walked as one strided
// axis in every tensor (the executor then falls back to the reference
// evaluator). The space's strides hold the kernel tensors' and then the
// position tensors'. The tactics and their rule list are in
// schedule/reductions/ (schedule_reduction.cpp).
std::optional<ReductionSchedule> schedule_reduction(const ReductionAnalysis& analysis,
    const std::vector<int64_t>& reference_sizes, const std::vector<TensorArg>& inputs,
    const std::vector<TensorArg>& outputs, const std::vector<TensorArg>& positions,
    const DeviceInfo& device, const ReductionTuning& tuning = {});

}  // namespace nvfuse
