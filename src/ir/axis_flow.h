// Where each logical axis of an expr's input goes in one of its outputs: the
// map sharding propagation and resharding lowering both follow. An axis
// either becomes an output axis, or is summed away (reduced or contracted:
// its shards then hold partial results that a collective must combine), or
// disappears without a sum (a squeezed broadcast). Independently, an axis
// may be one the expr needs whole on every device (a slice's cut axis, a
// cat's dim, a padded axis, attention's key length and head size, a
// reshape's axis merged under another): a sharded one is gathered first.
#pragma once

#include <optional>
#include <vector>

#include "ir/fusion.h"
#include "ir/op_table.h"

namespace nvfuse {

struct AxisFlow {
  // Per input axis: the output axis it becomes, or -1.
  std::vector<int64_t> to_output;
  // Per input axis: true when it is summed away (combined with `combine`).
  std::vector<bool> summed;
  // Per input axis: true when the expr must see it whole.
  std::vector<bool> whole;
  // Per input axis: true when it becomes an output axis of another extent
  // (the leading axes of a reshape's split or merge group): a sharding
  // carries only when the device count divides both extents.
  std::vector<bool> resized;
  OpType combine = OpType::add;
};

// The flow of tensor input `input` of `expr` into tensor output `output`;
// nullopt for the exprs sharding does not follow yet (indexing, scans,
// creation...).
std::optional<AxisFlow> axis_flow(const Expr& expr, size_t input, size_t output = 0);

// Whether axis `axis` of `in`, sharded over `devices`, keeps that sharding
// in `out` through `flow` (and, read backward, whether `out`'s axis sharded
// so can come from `in`'s): it flows to an output axis, is not needed whole,
// and a resized axis splits evenly on both sides.
bool keeps_sharding(const AxisFlow& flow, int64_t axis, const TensorView& in, const TensorView& out,
    int64_t devices);

// The axis of `in` whose sharding over `devices` carries into axis `c` of
// `out` through `flow`, or -1.
int64_t source_axis(
    const AxisFlow& flow, const TensorView& in, const TensorView& out, int64_t c, int64_t devices);

}  // namespace nvfuse
