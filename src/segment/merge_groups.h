// Splits a group of kernel exprs that no scheduler takes whole into few
// groups that one kernel each does take (a sum of a sum, a row sum added
// to a column sum): exprs are merged greedily, in run order, into the
// group of a producer or of a reader of the same tensor when the merged
// group is still one kernel and the groups still form a DAG; then
// pointwise groups of the same extents that do not read each other share
// a kernel when it takes them both. Greedy: not always the fewest, but
// each merge is checked, and it never loops.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/fusion.h"

namespace nvfuse {

struct MergedGroup {
  std::vector<const Expr*> exprs;  // in the order of the given exprs
  // False: no scheduler takes it; it runs on the reference evaluator.
  bool accepted = false;
};

// True when one generated kernel computes `exprs` (a group's exprs, in
// run order; the values they read from outside the group are its inputs).
using GroupCheck = std::function<bool(const std::vector<const Expr*>&)>;

// `exprs`: tensor exprs of `fusion` in topological order; values they read
// from other exprs are inputs of the groups, and values used by other exprs
// or returned are their outputs. Returns groups in an order that runs
// producers first. Broadcasts, expands and squeezes go with their consumer
// (a relabeling is never a kernel of its own when it can be avoided);
// rejected exprs that touch are merged, as the reference evaluator runs
// them alike. `accepts` is called about once per (expr, candidate group)
// in the first pass, then once per producer edge per pass of the second.
// `tv`'s extents as a key: equal keys, equal extents (a constant's value,
// else the symbolic extent's identity).
std::vector<std::string> extents_key(const TensorView* tv);

std::vector<MergedGroup> merge_into_kernel_groups(
    const Fusion& fusion, const std::vector<const Expr*>& exprs, const GroupCheck& accepts);

}  // namespace nvfuse
