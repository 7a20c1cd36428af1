// ReductionGenerator, shared by the reduction code generator's files (not
// included outside src/codegen): one fusion's kernel text, by kernel kind.
#pragma once

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "codegen/expr_statement.h"
#include "codegen/reduction_codegen.h"

namespace nvfuse {

// Statements in creation order, so that the generated text (and the kernel
// cache key) does not depend on where the IR nodes were allocated.
struct CreationOrder {
  bool operator()(const Statement* a, const Statement* b) const {
    return a->serial() < b->serial();
  }
};
using TensorSet = std::set<const TensorView*, CreationOrder>;
using ExprSet = std::set<const Expr*, CreationOrder>;

// Kernel tensors are numbered in `tensors_` order (inputs, then outputs):
// the slot `t` of the Args layout, of params.access and of the helpers.
// The helpers not defined here are in reduction_generator.cpp; the kernels
// in reduction_codegen.cpp (inner), walked_rows_codegen.cpp (its pipelined
// and staged rows) and outer_reduction_codegen.cpp (outer, finishing).
class ReductionGenerator {
 public:
  ReductionGenerator(const ReductionAnalysis& analysis, const ReductionParams& params);

  KernelSource generate() const;

 private:
  // ---- tensors and names ----------------------------------------------------

  size_t slot_of(const TensorView* tv) const {
    return std::find(tensors_.begin(), tensors_.end(), tv) - tensors_.begin();
  }
  bool is_kernel_input(const TensorView* tv) const {
    return std::find(a_.inputs.begin(), a_.inputs.end(), tv) != a_.inputs.end();
  }
  bool is_output_slot(size_t t) const { return t >= a_.inputs.size(); }
  bool per_row(const TensorView* tv) const { return a_.is_per_row(tv); }
  // The same values in every row (a weight, a bias): reloaded by each phase
  // that reads them (from L1/L2) instead of held in registers across the
  // reductions of a persistent row.
  bool per_column(const TensorView* tv) const { return a_.is_per_column(tv); }
  // Loaded once per row and held in registers (or, staged, in shared
  // memory) by every phase.
  bool held(const TensorView* tv) const { return p_.persistent && !per_row(tv) && !per_column(tv); }
  // A per-column input loaded into registers before a staged walk
  // (ReductionParams::hold_columns), read by every phase of every row.
  bool column_held(const TensorView* tv) const {
    return p_.hold_columns && per_column(tv) && !per_row(tv) && is_kernel_input(tv);
  }
  // A chunked row that a cluster streams: each block re-reads its part of
  // the row per phase.
  bool streamed() const { return p_.streamed(); }
  InnerAccess access(size_t t) const { return p_.access[t]; }
  int width_of(size_t t) const {
    return access(t) == InnerAccess::kBroadcast ? 1 : p_.vector_width;
  }
  std::string array_type(size_t t) const {
    return "nvfuse::Array<" + cuda_type_of(tensors_[t]->dtype()) + ", " +
        std::to_string(width_of(t)) + ">";
  }
  std::string lane(size_t t) const { return width_of(t) == 1 ? "0" : "v"; }
  bool is_value_input(const Val* v) const {
    return std::find(a_.value_inputs.begin(), a_.value_inputs.end(), v) != a_.value_inputs.end();
  }
  // Where a statement's element lies, which position exprs need: per row of
  // the inner kernel, at lane v of group k of an inner row, at lane v of
  // reduced index r of an outer column group, or at lane v of the outer
  // kernel's per-column epilogue.
  enum class Walk { kRow, kInner, kOuter, kOuterRow };
  std::string statement(const Expr* expr, Walk walk) const;
  // `const <type> <out> = value;  // <expr>`, for `expr`'s output.
  static std::string declaration(const Expr* expr, const std::string& value);
  // A row gather (schedule/reduction_analysis.h): the source's element at
  // the row's index along the reduced axis, loaded once per row.
  std::string row_gather_statement(const Expr* expr, Walk walk) const;
  std::string arg_text(const Val* v) const { return "args." + name_of_value(v); }
  // A float division of a per-element value by a per-row one: computed as
  // a product with the row's reciprocal (nvfuse::RowDivisor, declared by
  // row_divisors at the top of the phase).
  bool divides_by_row_value(const Expr* expr) const;
  // An fp32 exp of a value that is never positive (schedule/value_signs.h:
  // softmax's y - max(y), log-softmax's y - max(y) - log-sum): computed by
  // nvfuse::exp_nonpositive.
  bool exp_of_nonpositive(const Expr* expr) const;
  std::string row_divisors(const std::vector<const Expr*>& exprs, const std::string& indent) const;

  // ---- position tensors (iota, random ops) ----------------------------------

  // Names of the kernel tensors, then of the position tensors (`at_<name>`:
  // a position tensor may be a kernel output too): what the Args strides
  // and the row offsets describe.
  std::vector<std::string> walked_names() const {
    std::vector<std::string> names;
    for (const TensorView* tv : tensors_) {
      names.push_back(name_of_value(tv));
    }
    for (const TensorView* tv : a_.position_tensors) {
      names.push_back(position_name(tv));
    }
    return names;
  }
  static std::string position_name(const TensorView* tv) { return "at_" + name_of_value(tv); }
  // The element's position in `tv` (a position tensor) at lane `v`.
  std::string position_of(const TensorView* tv, Walk walk, const std::string& v) const;
  // The random ops of `exprs` that use unit floats (their per-element ones).
  std::vector<const RngOp*> unit_word_ops(const std::vector<const Expr*>& exprs) const;
  bool draws_unit_words(const Expr* expr) const;
  // `unsigned int unit_<name>` `extents` for each of them, the random words
  // whose unit floats the elements take: the inner kernels hold
  // [kGroups][kVec] (drawn once per group, and by the first phase only when
  // the row is persistent: Philox rounds cost more than the registers),
  // the outer kernel [kVec].
  std::string declare_unit_words(const std::vector<const Expr*>& exprs, const std::string& extents,
      const std::string& indent) const;
  // Draws their kVec lanes' words into unit_<name>`slot` (four consecutive
  // lanes share a Philox block).
  std::string draw_unit_words(const std::vector<const RngOp*>& ops, Walk walk,
      const std::string& slot, const std::string& indent) const;
  // The word that element `v` of `tv` holds in `walk`, when `tv` is a
  // uniform(0, 1) float tensor drawn as unit words there, else "".
  std::string unit_word_of(const Val* tv, Walk walk) const;
  // A compare of such a tensor with a scalar, as a compare of its words
  // (nvfuse_philox::unit_below): dropout's keep mask; else "".
  std::string unit_compare(const Expr* expr, Walk walk) const;
  std::string position_statement(const Expr* expr, Walk walk) const;

  // ---- draws a group may skip (skipped_draws.cpp) ----------------------------

  // A late-drawing phase's random ops whose values only choose between the
  // operands of wheres (ReductionAnalysis::masked_choices: dropout's keep
  // mask after a masked softmax), the wheres they decide in this phase, and
  // what computes those wheres' operands. Where every
  // such where's operands are equal in bits in all of a group's lanes, no
  // draw can change a result: the group skips its Philox rounds (half a
  // causal attention row's groups). Empty `ops` where that does not hold.
  struct SkippableDraws {
    std::vector<const RngOp*> ops;
    std::vector<const Expr*> wheres;
    std::vector<const Expr*> operand_exprs;  // in run order
    TensorSet operand_loads;
  };
  SkippableDraws skippable_draws(const std::vector<const Expr*>& exprs, int phase) const;
  // Group k's test (its lanes' where operands) and its draws where the test
  // finds operands that differ; zero words elsewhere.
  std::string draws_where_needed(const SkippableDraws& skippable, const std::string& indent) const;

  void build_layout();

  // ---- reductions -----------------------------------------------------------

  // The accumulator's element type: float for half types.
  std::string acc_element(const Expr* r) const;
  std::string acc_type(const Expr* r) const {
    return r->is<VarMeanOp>() ? "nvfuse::Welford<" + acc_element(r) + ">" : acc_element(r);
  }
  std::string op_type(const Expr* r) const;
  std::string acc_name(const Expr* r) const { return "acc_" + name_of_value(r->output(0)); }
  int input_phase(const Expr* r) const { return a_.phase_of(r->input(0)->as<TensorView>()); }
  // The reductions of `reductions` whose input is of phase `phase`.
  std::vector<const Expr*> of_phase(const std::vector<const Expr*>& reductions, int phase) const;
  std::vector<const Expr*> reductions_of_phase(int phase) const {
    return of_phase(a_.reductions, phase);
  }
  std::vector<const Expr*> outer_reductions_of_phase(int phase) const {
    return of_phase(a_.outer_reductions, phase);
  }
  // Each outer reduction's partial rows: `column_` in shared memory (the
  // block's; staged rows: the thread's, in registers), `partial_` in the
  // workspace (every block's).
  std::string column_name(const Expr* r, const std::string& prefix = "column_") const {
    return prefix + name_of_value(r->output(0));
  }
  // Pointers `prefix`<result> to each outer reduction's partial rows (`rows`
  // rows of `width` columns) in `base`: the regions of column_partial_offsets.
  std::string column_regions(const std::string& base, const std::string& rows,
      const std::string& width, const std::string& prefix, const std::string& indent) const;

  // The results of `r` from its final accumulator `acc`.
  std::string finalize(const Expr* r, const std::string& acc, const std::string& indent) const;

  // ---- what each phase computes ---------------------------------------------

  // Per-element exprs (and, with `through_rows`, per-row ones too) needed
  // for `roots`, producers first; `loads` gets the kernel inputs they read,
  // and the values carried out of phases before `phase`, which are read
  // from registers instead of computed.
  std::vector<const Expr*> cone(const std::vector<const TensorView*>& roots, bool through_rows,
      TensorSet* loads, int phase = 0) const;
  // A max or min reduction over the lanes of a half-type kernel input
  // (cast to float or not) that this phase loads as whole vectors (`loads`):
  // that input, whose pairs the reduction then takes packed
  // (nvfuse::PackedExtreme, packed_extremes.cpp); nullptr for any other.
  const TensorView* packed_source(const Expr* r, const TensorSet& loads) const;
  // A phase's packed reductions with their sources, decided once per phase.
  using PackedReductions = std::vector<std::pair<const Expr*, const TensorView*>>;
  PackedReductions packed_reductions(
      const std::vector<const Expr*>& reductions, const TensorSet& loads) const;
  static bool is_packed(const PackedReductions& packed, const Expr* r) {
    return std::any_of(
        packed.begin(), packed.end(), [r](const auto& entry) { return entry.first == r; });
  }
  std::string packed_name(const Expr* r) const { return "packed_" + name_of_value(r->output(0)); }
  // The packed accumulators: declared before the phase's groups, fed a
  // group's vector, folded into the float accumulators after.
  enum class PackedPart { kDeclare, kAdd, kFold };
  std::string packed_lines(
      const PackedReductions& packed, PackedPart part, const std::string& indent) const;
  // A persistent row's exps that later phases read again
  // (ReductionParams::carry_exps): stored by the phase that computes them
  // into `carried_<name>[kGroups][kVec]`, read there by the later ones.
  bool carried(const TensorView* tv) const { return carried_.count(tv) > 0; }
  std::vector<const TensorView*> element_outputs(int phase) const;
  std::vector<const TensorView*> element_roots(int phase) const;
  // Per-row exprs (not reductions) whose value is available from `phase`.
  std::vector<const Expr*> row_exprs(int phase) const;

  // ---- shared text ----------------------------------------------------------

  // Offsets of every kernel tensor at the row coordinates of `index`.
  std::string row_offsets(const std::string& index) const;
  bool uses_row_dividers() const;
  // Loads `target` (an Array) from offset `offset`: a vector where the
  // tensor is contiguous along the vectorized axis, else one element.
  std::string load(size_t t, const std::string& target, const std::string& offset,
      const std::string& indent) const;
  std::string store(size_t t, const std::string& source, const std::string& offset,
      const std::string& indent) const;
  // Inner kernels: tensor t's offset at column `col` of the row.
  std::string column_offset(size_t t) const;
  // Outer kernels: tensor t's offset at reduced index r (the vectorized
  // axis is in the row offset already).
  std::string down_offset(const TensorView* tv) const {
    const std::string name = name_of_value(tv);
    return "row_" + name + " + r * args.col_stride_" + name;
  }
  std::string cell(const Expr* r, const std::string& g, const std::string& row) const {
    return "args.workspace + ((Index(" + g + ") * args.rows + " + row + ") * " +
        std::to_string(cells_) + " + " + std::to_string(first_cell_.at(r)) + ") * 8";
  }

  // ---- the inner kernel -----------------------------------------------------

  std::string inner_kernel() const;
  static std::string indented(const std::string& text, const std::string& indent);
  // The loop over a thread's columns of an inner-outer row (col, v), with
  // `body` (one statement per line) inside; at a two-space indent.
  std::string owned_columns(const std::string& body) const;
  // Reduces `reductions` across the row's lanes, block and cluster
  // together: one barrier per level for all of them. Plain reductions pass
  // as nested pairs; a Welford state passes alone.
  // `first_warp`: the result goes to the first warp only, and the other
  // warps leave the kernel (finishes_in_first_warp).
  std::string reduce_together(
      const std::vector<const Expr*>& reductions, bool first_warp = false) const;
  // Whether the last phase's reductions (`plain_reductions`, all of them)
  // finish in the block's first warp: one row a block, and nothing after
  // them but per-row math and lane 0's stores (first_warp_finish.cpp).
  bool finishes_in_first_warp(int phase, const std::vector<const Expr*>& plain_reductions) const;
  // Inner-outer: the rows a block (or a cluster) walks, and its partial rows.
  std::string inner_outer_rows() const;
  // One row of the inner kernel (or one per slot of a block), from `row`
  // on: per-row inputs, the phases, the per-row outputs.
  std::string row_body() const;
  // Pipelined rows (ReductionParams::pipelined): the loop over the block's
  // rows around row_body, the held inputs of the first row loaded before it.
  std::string pipelined_rows() const;
  // Staged rows (ReductionParams::staged): the loop over the block's (or
  // cluster's) rows around row_body, each row's held inputs copied into
  // shared memory while the row before computes.
  std::string staged_rows() const;
  // Copies this thread's groups of the held inputs of row `row` (if it
  // exists) into shared buffer `buffer` (cp.async), and commits them.
  std::string stage_held_row(
      const std::string& buffer, const std::string& row, const std::string& indent) const;
  // `body` (statements, one per line) for each of this thread's groups of
  // row `row` that lies in the row (k, col; the block's chunk of a cluster
  // row), after the row's offsets.
  std::string thread_groups_of_row(
      const std::string& row, const std::string& body, const std::string& indent) const;
  // Staged inner-outer rows: each thread's column partials as register
  // arrays (declared, cleared), and their store to the workspace's partial
  // rows after the walk.
  std::string register_column_partials() const;
  std::string store_register_partials() const;
  // ReductionParams::partial_cluster: the outer reductions' partials in
  // the shared arrays named with `prefix` (`n` values each, the block's
  // partial rows side by side) combined over the cluster into its partial
  // rows of the workspace.
  std::string combine_cluster_partials(
      const std::string& prefix, const std::string& n, const std::string& indent) const;
  // Loads the held inputs of row `row` (if it exists) into `prefix`<name>.
  std::string load_held_row(
      const std::string& prefix, const std::string& row, const std::string& indent) const;
  // The kernel inputs held in registers across a persistent row's phases.
  std::vector<const TensorView*> held_inputs() const {
    return inputs_where(&ReductionGenerator::held);
  }
  // The kernel inputs with one value per row (a mean, a reciprocal
  // deviation).
  std::vector<const TensorView*> per_row_inputs() const {
    return inputs_where(&ReductionGenerator::per_row);
  }
  // The kernel inputs, in order, that `keep` accepts.
  std::vector<const TensorView*> inputs_where(
      bool (ReductionGenerator::*keep)(const TensorView*) const) const;
  std::string inner_phase(int phase, TensorSet& loaded) const;
  // A streamed row's block asks L2 for its part of row `row` (the
  // per-element inputs in 16-byte vectors), one bulk prefetch per tensor
  // from thread 0: the walker's first row before its walk, each next row
  // in the last phase of the one before.
  std::string prefetch_part(const std::string& row, const std::string& indent) const;
  // A persistent row's unit floats (random ops), all drawn in its first
  // phase right after the loads go out: the Philox rounds need no data, so
  // they fill the loads' latency instead of lengthening a later phase (the
  // attention prologue's dropout after softmax's two reductions, in fp32).
  // With ReductionParams::late_draws (issue-bound rows), those the phase of
  // `phase_exprs` reads first, for all the thread's groups before its
  // math. Each group draws under its `valid[k]`: drawing every group
  // unconditionally let ptxas compute the round keys once (616
  // instructions instead of 656) but measured slower (attention prologue
  // bf16 71 -> 68% of copy bandwidth at 64 MB, 77 -> 74 at 256 MB). Adds
  // them to `drawn`. Not in inner-outer kernels, which have no registers
  // to hold them longer.
  std::string phase_draws(const std::vector<const Expr*>& phase_exprs, TensorSet& drawn,
      const std::string& indent) const;
  // Element (k, v) of the loaded per-element tensors in `loads` and the
  // values `exprs` compute from them, one statement each.
  std::string element_values(const TensorSet& loads, const std::vector<const Expr*>& exprs,
      const std::string& indent) const;
  // Combines each phase-`phase` accumulator over the row's lanes (and, for a
  // split row, over its blocks).
  std::string inner_reduce(int phase) const;
  // A persistent row's variance reduction `r`: the row's sum, its mean, the
  // squared deviations from it summed over the row; into r's accumulator.
  std::string row_variance(const Expr* r) const;
  // Whether variances take row_variance (else Welford merges). A cluster
  // row of half types merges (one block and one cluster reduction): at
  // 4096x65536 on an H100, bf16 layer norm 72% of copy bandwidth merged
  // against 58% with the two row sums, and fp32 75% against 86%. Staged
  // rows take the sums: the next row's copies cover the second cluster
  // reduction, and the Welford merges (a division each, by every thread
  // for each block's state) made the kernel issue-bound (bf16 layer norm
  // 4096x65536 79 -> 86%, 512x262144 63 -> 84%).
  bool uses_row_variance() const;
  // A width-generic kernel whose rows take at most a warp each (several a
  // block); its other buckets hold one row a block.
  bool warp_rows_at_launch() const { return p_.width_generic && p_.block_size <= 128; }
  // `value` combined over the row's lanes by `op` (every lane gets it).
  std::string row_reduce(const std::string& value, const std::string& op) const;
  // `value` combined over the cluster's blocks by `op`, at the next call
  // site number (each site has its own slots).
  std::string cluster_reduce(const std::string& value, const std::string& op) const;

  // ---- the outer kernel and the inner-outer finishing kernel ----------------

  std::string outer_kernel() const;
  std::string outer_row_walk(const std::vector<const Expr*>& exprs, const TensorSet& loads) const;
  std::string outer_split_combine() const;
  std::string column_reduce_each() const;
  // Outer split partials (store_columns in device_split_reduction.cuh): the
  // fields of r's accumulator, each a plane, and the address of this
  // thread's columns in field `field`'s plane of partial row `g`.
  std::vector<std::string> partial_fields(const Expr* r) const;
  std::string partial_plane(const Expr* r, size_t field, const std::string& g) const;
  std::string store_partial_row(const std::string& g) const;
  std::string combine_partial_rows(
      const std::string& first, const std::string& count, const std::string& stride) const;
  std::string outer_column_epilogue() const;
  // An outer kernel split over a cluster (ReductionParams::cluster): after
  // each block's walk and column_reduce_all, block rank 0 combines the
  // blocks' results in rank order; the other blocks return.
  std::string cluster_combine() const;
  // Combines the partial rows of every block column by column (kY threads
  // down the partial rows, then a tree over them: a fixed order, so results
  // are deterministic), finalizes the outer reductions and computes the
  // column outputs.
  std::string column_finish_kernel() const;

  const ReductionAnalysis& a_;
  const ReductionParams& p_;
  std::vector<const TensorView*> tensors_;
  std::map<const Expr*, int> first_cell_;
  int cells_ = 0;
  KernelArgLayout layout_;
  TensorSet carried_;
  // Cluster reductions emitted so far (generate() runs once per generator).
  mutable int cluster_sites_ = 0;
};

}  // namespace nvfuse
