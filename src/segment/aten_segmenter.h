// Cuts a fusion at the exprs that run as ATen calls (shape, indexing,
// creation, random and matmul ops), so that the pointwise and reduction
// work between them still runs as generated kernels. Every pure-kernel
// fusion stays one piece.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "ir/fusion.h"

namespace nvfuse {

// True for exprs that the pointwise and reduction kernels do not compute;
// the fusion is cut there, one expr per segment. A cut-out expr runs on
// the reference evaluator (ATen) unless the coordinate kernel takes it (a
// slice, a gather, a random op...); in fusions without reductions those
// coordinate exprs are not cut at all but join the kernel around them.
bool runs_through_aten(const Expr& expr);

// What a fusion's reductions decide about where its exprs run.
struct FusionReductions {
  enum Sets {
    kNone,
    kOneAxisSet,       // every reduction reduces the same axes of one rank
    kSeveralAxisSets,  // the kernel may split into one per axis set
  };
  Sets sets = kNone;
  // Each (rank of a reduction's input, its reduced axes), once.
  std::vector<std::pair<int64_t, std::vector<int64_t>>> axis_sets;
};
FusionReductions reductions_of(const Fusion& fusion);

// True for the exprs cut out of the kernels as a segment of their own:
// ATen exprs; next to reductions the coordinate exprs too (each then its
// own coordinate kernel), except iota and random ops, which the reduction
// kernels compute from the element's position (dropout before a layer norm
// reads no random tensor), squeezes (a relabeling), and a row gather
// (schedule/reduction_analysis.h: cross-entropy's label logit, also where
// a mean over the rows follows, in a kernel of its own). A random op
// that draws its seed stays cut out where the reductions may split the
// kernel: each piece would draw its own.
bool is_cut_out(const Expr& expr, const FusionReductions& reductions);

struct FusionSegment {
  // Inputs: the original fusion's inputs at positions `inputs`, then one
  // tensor per entry of `boundary`; outputs: one per entry of `outputs`.
  std::unique_ptr<Fusion> fusion;
  std::vector<size_t> inputs;        // positions among the original inputs
  std::vector<const Val*> boundary;  // original tensors other segments make
  std::vector<const Val*> outputs;   // original values this segment makes
  bool is_aten = false;
  // A bookended view (segment/host_views.h): a chain of slices, permutes,
  // squeezes and reshapes run as zero-copy ATen views, never as a kernel.
  bool is_host_view = false;
};

// "view", "aten" or "fused": how `segment` runs, as summaries, segment
// definitions and the runtime program name it.
const char* kind_name(const FusionSegment& segment);

// The segments in an order that runs producers first: kernel groups are
// connected pointwise/reduction exprs at one "ATen depth" (the number of
// ATen exprs on the longest path from the inputs; host views do not count,
// being free), so no two segments depend on each other. A segment_set
// counts as one more step of depth (a hint: the kernel computing its input
// ends there and the set heads its consumers' kernel). A kernel group that
// does not run as kernels (segment/kernel_choice.h) is split into the fewest groups that one kernel
// each takes (segment/merge_groups.h); what no kernel takes runs on the
// reference evaluator. Empty when the fusion is a single segment: always
// when nothing cuts it, unless `split_uncut` (its caller found that no plan
// runs it as kernels), which splits it like any other kernel group.
std::vector<FusionSegment> segment_at_aten_ops(const Fusion& fusion, bool split_uncut = false);

// A sharded fusion cut at its host steps (communications and local slices,
// multidevice/insert_communications.h), each a segment of its own, the
// compute between them grouped as above, except that compute a host step
// does not wait for comes after it (a weight gradient after the Allreduce
// of the input gradient, overlapping it); empty when there are none.
std::vector<FusionSegment> segment_at_host_steps(
    const Fusion& fusion, const std::unordered_set<const Expr*>& steps);

}  // namespace nvfuse
