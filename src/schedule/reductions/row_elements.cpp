// Inner rows: the elements a thread holds, and from them the threads a row
// takes and whether the row stays in registers (persistent). The default
// is ReductionTuning::elements_per_thread; the rules below change it where
// the H100 (or, where they say so, the H200) measured better.
#include "schedule/cluster_shapes.h"
#include "schedule/reductions/reduction_tactics.h"

namespace nvfuse {

namespace {

constexpr int64_t kMaxHalfElementRowThreads = 256;  // see half_element_rows
// Late-draw rows take at most this many threads: 1024-thread blocks get 64
// registers, and a bf16 layer norm followed by dropout at 16384 (16
// elements a thread) spilled 12 bytes.
constexpr int64_t kMaxLateDrawBlock = 512;

// Rows of half types that read one element a load (an odd width, or rows
// an odd number of elements apart: a language model's logits over GPT-2's
// 50,257 words), that phases re-read and that one block does not hold at
// the usual elements a thread (a cluster holds them): twice the elements a
// thread, so the row's cluster has half the blocks to wait for at each of
// its reductions. H200, % of copy bandwidth at 8192 x 50257 bf16, 16 -> 32
// elements (tools/tune_reduction.py): log-softmax 32 -> 45, softmax 31 ->
// 42 (torch.compile 38 and 32); 64 elements measured 47 and 22 (spilled).
// Rows that read 16-byte vectors (50256 wide) measure 84 either way.
bool unvectorized_long_row(const InnerRows& rows) {
  const InnerRowFacts& facts = rows.facts;
  return rows.walk.schedule.params.vector_width == 1 && facts.holds_only_half_types &&
      rows.analysis.last_element_phase > 0 && !rows.analysis.has_outer_reductions() &&
      !facts.draws_random &&
      facts.row_threads(rows.tuning.elements_per_thread, 1) > rows.tuning.max_persistent_threads;
}

// Elements a thread holds before random draws are considered.
int64_t row_elements(const InnerRows& rows) {
  const InnerRowFacts& facts = rows.facts;
  const int vector_width = rows.walk.schedule.params.vector_width;
  // Rows of half types that write nothing per element but hold their row
  // for a later phase (cross-entropy forward bf16, a loss per row) once
  // took twice the elements a thread (82 -> 85% of copy bandwidth at
  // 4096x8192 then), as pure reductions (sum, var_mean) did; since the
  // packed row max the usual 16 measure faster: cross-entropy forward bf16
  // 64 MB 26.30 -> 26.11 us (H100). A loss row's time past a bare read of
  // its bytes is the last rows' math after their loads arrive, which half
  // the elements a thread halves.
  // Inner-outer rows holding a type wider than 2 bytes (the unstaged fp32
  // backward norms) that one block holds at a quarter of the elements a
  // thread take that (one 16-byte fp32 group at the default 16): twice to
  // four times the threads walk the rows at about half the registers,
  // where the blocks walking the rows (at most one wave, a partial row
  // each) had left the SMs underfilled. H100, % of copy bandwidth, 16 -> 4
  // elements (tools/tune_reduction.py): RMS-norm backward fp32 2048x1600 47
  // -> 64, 2048x4096 73 -> 88, 8192x4096 93 -> 96, 16384x1600 91 -> 96;
  // layer-norm backward fp32 42 -> 53, 65 -> 71, 86 -> 91, 86 -> 90. Rows
  // of 8192 (2048 threads at 4) keep 16: the other shape cost layer norm
  // 96 -> 93. bf16 RMS-norm backward measured mixed (1600: 33 -> 37, 4096:
  // 54 -> 51, 32768x8192: 93 -> 84) and keeps 16.
  const int64_t quarter_elements = std::max<int64_t>(1, rows.tuning.elements_per_thread / 4);
  const bool quarter_rows = rows.analysis.has_outer_reductions() && !facts.holds_only_half_types &&
      facts.row_threads(quarter_elements, vector_width) <= rows.tuning.max_persistent_threads;
  // Inner-outer rows of half types with one column reduction (RMS-norm
  // backward bf16; never staged) take half the elements a thread where the
  // row then takes at most kMaxHalfElementRowThreads threads. H100, % of
  // copy bandwidth, 16 -> 8 elements (with partial clusters where they
  // apply): 2048x1600 32 -> 38, 16384x1600 81 -> 90; not taken: 2048x4096
  // 55 -> 53, 8192x4096 91 -> 93, 32768x8192 95 -> 85 (1024 threads a row).
  const int64_t half_elements = std::max<int64_t>(1, rows.tuning.elements_per_thread / 2);
  const bool half_element_rows = rows.analysis.outer_reductions.size() == 1 &&
      facts.holds_only_half_types &&
      facts.row_threads(half_elements, vector_width) <= kMaxHalfElementRowThreads;
  if (quarter_rows) {
    return quarter_elements;
  }
  if (half_element_rows) {
    return half_elements;
  }
  return unvectorized_long_row(rows) ? 2 * rows.tuning.elements_per_thread
                                     : rows.tuning.elements_per_thread;
}

}  // namespace

bool choose_row_elements(InnerRows& rows) {
  const InnerRowFacts& facts = rows.facts;
  ReductionParams& p = rows.params();
  const int64_t elements = row_elements(rows);
  // Rows that one block of at most kMaxLateDrawBlock threads holds and that
  // read their random values after phase 0 draw late at the full elements
  // per thread; the others take half the elements (their unit words are
  // drawn with the loads), as measured before late draws (attention
  // prologue bf16 16 -> 8 elements early: 59 -> 63; dropout + layer norm
  // the same).
  rows.draws_late = facts.half_random_rows && !rows.analysis.has_outer_reductions() &&
      facts.row_threads(elements, p.vector_width) <=
          std::min<int64_t>(rows.tuning.max_persistent_threads, kMaxLateDrawBlock) &&
      rows.analysis.first_random_read_phase() > 0;
  // Late-drawing rows with a masked fill (a causal softmax, then dropout)
  // skip the draws of their filled groups (codegen/skipped_draws.cpp): with
  // Philox off about half the row, twice the elements a thread keep more
  // loads in flight, and a 1024-wide row is one warp's. H100, % of copy
  // bandwidth, attention prologue bf16 16 -> 32 elements: 64 MB 78 -> 88,
  // 256 MB 86 -> 98 (fp32 rows draw early: 102 either way).
  rows.masked_late_draws = rows.draws_late && !rows.analysis.masked_choices().empty();
  rows.max_groups = std::max<int64_t>(1,
      elements * (rows.masked_late_draws ? 2 : 1) /
          (facts.half_random_rows && !rows.draws_late ? 2 : 1) / p.vector_width);
  rows.chunk_max_groups = rows.max_groups;
  // Staged inner-outer rows that one block holds at one vector group a
  // thread take that: twice the threads walk the rows' copies, and the half
  // as many blocks write half the partial rows. H100, % of copy bandwidth,
  // 2 -> 1 group: layer-norm backward bf16 8192x4096 61 -> 72, 32768x8192
  // 88 -> 91, 2048x1600 30 -> 29. Not below kShortRowBlock threads (a block
  // of a warp per row).
  const bool one_group_rows = facts.stages_inner_outer &&
      next_pow2(facts.groups) >= kShortRowBlock &&
      next_pow2(facts.groups) <= rows.tuning.max_persistent_threads;
  rows.lanes = next_pow2(ceil_div(facts.groups, one_group_rows ? 1 : rows.max_groups));
  p.persistent = rows.lanes <= rows.tuning.max_persistent_threads;
  return true;
}

}  // namespace nvfuse
