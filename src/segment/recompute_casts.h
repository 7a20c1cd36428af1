// Casts of fusion inputs that several kernel groups read are recomputed in
// each reader's kernel instead of written by one kernel and read back by
// the others. A cast costs nothing in a kernel that reads its input; as a
// boundary it costs a write and a read of the cast tensor (batch norm's
// bf16 activation widened to float was written as float by the statistics
// kernel and read again, at twice its bytes, by the normalization kernel).
#pragma once

#include <unordered_set>
#include <vector>

#include "segment/merge_groups.h"

namespace nvfuse {

// `groups`: merge_into_kernel_groups' result for `exprs`. A cast whose
// operand is a fusion input, whose result is no fusion output and is read
// only by `exprs`, joins every group that reads it when each still is one
// kernel (`accepts`); the group that made it keeps it only if it reads it
// too, and a group left empty is dropped. Returns the groups; the casts
// recomputed so go into `recomputed` (their results are no segment's
// output: every reader computes its own).
std::vector<MergedGroup> recompute_input_casts(const Fusion& fusion,
    const std::vector<const Expr*>& exprs, std::vector<MergedGroup> groups,
    const GroupCheck& accepts, std::unordered_set<const Expr*>& recomputed);

}  // namespace nvfuse
