// canSchedule for the reduction and normalization schedulers, and what it
// learns doing so. Every reduction in the fusion must reduce the same axes of
// one reference shape (the first reduction's input); the kernel then sees a
// 2-D problem: rows (the kept axes) by a reduced width. Tensors are either
// per-element (they vary along the reduced axes) or per-row (one value per
// row: reduction results, [N, 1] inputs, what is computed from them).
//
// Phases: a per-element value's phase is how many reductions lie between it
// and the inputs. Phase 0 is computed straight from the inputs; a reduction of
// a phase-p value yields a per-row value available from phase p + 1 on, and
// per-element values that use it (x - mean) belong to phase p + 1. A
// normalization (layer norm: mean and variance, then the normalized output)
// has phases 0 and 1; softmax (max, sum of exp, divide) has 0, 1 and 2.
//
// A row gather (is_row_gather) is a per-row value too: one element of an
// input's row at a per-row index along the reduced axis (cross-entropy's
// logit of the label), read by the row's threads straight from memory.
// Squeezes of size-1 axes relabel a value and cost nothing.
//
// A second class of reductions, over exactly the kept axes and feeding only
// outputs (dgamma, dbeta next to dx), is accepted too: the kernel then
// accumulates per-column partial results while it walks the rows (see
// ReductionAnalysis::outer_reductions).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/all_exprs.h"
#include "ir/fusion.h"
#include "schedule/pointwise_analysis.h"

namespace nvfuse {

struct ReductionAnalysis {
  // Rank of the reference shape, and which of its axes are reduced.
  int rank = 0;
  std::vector<bool> reduced;
  // Tensors the kernel loads (device tensors), per-element ones and per-row
  // ones alike, and the values it takes by value (as the pointwise kernel).
  std::vector<const TensorView*> inputs;
  std::vector<const Val*> value_inputs;
  // Tensors the kernel writes, each once.
  std::vector<const TensorView*> outputs;
  // For each tensor the kernel touches: the reference axis of each of its
  // logical axes (-1 for none).
  AxisMaps axis_map;
  // Per tensor: true when it holds one value per row.
  std::unordered_map<const TensorView*, bool> per_row;
  // Per computed tensor: its phase (per-row values: the phase from which
  // they are available).
  std::unordered_map<const TensorView*, int> phase;
  // ReductionOp and VarMeanOp exprs, producers first.
  std::vector<const Expr*> reductions;
  // The tensor exprs the kernel computes, producers first.
  std::vector<const Expr*> exprs;
  // The last phase with per-element work.
  int last_element_phase = 0;
  // The reference tensor: the first reduction's input.
  const TensorView* reference = nullptr;

  // Inner-outer fusions (layer-norm backward): reductions over exactly the
  // kept axes ("outer": one value per column, dgamma and dbeta) next to the
  // per-row ones. Their inputs are per-element values of some phase; their
  // results feed only `column_exprs` (casts and unary math, producers
  // first) and the fusion outputs in `column_outputs`, never the rows.
  // None of these are in `exprs`, `reductions` or `outputs`.
  std::vector<const Expr*> outer_reductions;
  std::vector<const Expr*> column_exprs;
  std::vector<const TensorView*> column_outputs;

  // Results of position exprs (iota, random ops: codegen/index_values.h),
  // which the kernel computes from the element's position. Each is walked
  // like a kernel tensor laid out contiguous row-major over its logical
  // shape but with no memory: its offset at an element is that element's
  // position, which is all these ops read.
  std::vector<const TensorView*> position_tensors;
  // The random ops that draw (seed, offset) from torch's generator at each
  // launch, in the order of their (seed, offset) kernel arguments.
  std::vector<const RngOp*> drawn_random_ops;

  bool has_outer_reductions() const { return !outer_reductions.empty(); }
  // The first phase whose per-element work reads a random op's result (a
  // reduction's input or a kernel output it reaches): 2 for the attention
  // prologue's dropout after a softmax, 0 for dropout before a layer norm;
  // -1 without random ops.
  int first_random_read_phase() const;
  // The wheres whose conditions are all the fusion's random values reach
  // (each through one op to a bool, dropout's keep mask u < p), when none
  // of their value operands is made from a random value and one of them
  // from a masked fill, where(mask, s, ±inf) (a causal softmax's exact
  // zeros); empty otherwise. Where a group's lanes hold equal operands in
  // every such where, its draws cannot change a result
  // (codegen/skipped_draws.cpp).
  std::vector<const Expr*> masked_choices() const;
  // Some per-row value is a row gather: the kernel must walk rows (the
  // gather reads along the row), so the outer kernel is out.
  bool has_row_gather() const {
    for (const Expr* expr : exprs) {
      if (expr->is<GatherOp>()) {
        return true;
      }
    }
    return false;
  }
  bool has_variance() const {
    for (const Expr* r : reductions) {
      if (r->is<VarMeanOp>()) {
        return true;
      }
    }
    return false;
  }
  // The tensors the kernel writes: `outputs`, then `column_outputs`.
  std::vector<const TensorView*> kernel_outputs() const {
    std::vector<const TensorView*> all = outputs;
    all.insert(all.end(), column_outputs.begin(), column_outputs.end());
    return all;
  }

  bool is_per_row(const TensorView* tv) const { return per_row.at(tv); }
  // The same values in every row (a weight, a bias): no kept axis of its
  // own, whatever the call's sizes.
  bool is_per_column(const TensorView* tv) const;
  // Per-element fp32 exps that their own phase reduces (or writes) and a
  // later phase reads again: softmax's exp(x - max), summed in phase 1 and
  // divided by the sum in phase 2 (ReductionParams::carry_exps).
  std::vector<const TensorView*> exps_read_again() const;
  // Per-element fp32 selects read the same way: the attention prologue's
  // where(mask, scores, -inf), reduced by the max in phase 0 and read by
  // exp(s - max) in phase 1. Carried with the exps, they spare the later
  // phase the select and its mask test, and the mask and the scores die
  // after phase 0.
  std::vector<const TensorView*> selects_read_again() const;
  // Per-element fp32 results of the pointwise ops `kind` accepts that their
  // own phase reduces (or writes) and a later phase reads.
  std::vector<const TensorView*> read_again(
      const std::function<bool(const PointwiseOp&)>& kind) const;
  // Fusion inputs are phase 0.
  int phase_of(const TensorView* tv) const {
    auto it = phase.find(tv);
    return it == phase.end() ? 0 : it->second;
  }
};

// The analysis, or nullopt with the reason in `why_not`.
std::optional<ReductionAnalysis> analyze_reduction(const Fusion& fusion, std::string* why_not);

// True when `expr` is a gather (take_along_axis or gather) that the
// reduction kernel computes per row: along `reduced_axes`, which is one axis
// of reduced tensors of rank `rank`, from a fusion input of that rank, at an
// index of extent 1 along that axis (one index per row).
bool is_row_gather(const Expr& expr, int64_t rank, const std::vector<int64_t>& reduced_axes);

// True when the fusion has a reduction (ReductionOp or VarMeanOp).
bool has_reduction(const Fusion& fusion);

// Whether the kernel may write `output`, which updates a fusion input in
// place, straight into that input: a per-row output whose input nothing
// but per-row math reads (batch norm's running statistics). The kernels
// store a row's per-row outputs once, from the one thread that finishes
// the row after its reductions; every thread of the row loaded the
// row's per-row inputs before those reductions, and only the storing
// thread's values are written anywhere.
bool may_update_in_place(
    const ReductionAnalysis& analysis, const Fusion& fusion, const TensorView& output);

}  // namespace nvfuse
