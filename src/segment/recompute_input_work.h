// Elementwise work on fusion inputs that several kernel groups read is
// recomputed in each reader's kernel instead of written by one kernel and
// read back by the others, where that moves fewer bytes. Such work costs
// nothing in a kernel that reads its inputs; as a boundary it costs a
// write and a read of its result, often wider than the inputs. Batch
// norm's bf16 activation widened to float was written as float by the
// statistics kernel and read again by the normalization kernel; its
// backward wrote the float gradient and the float centred activation
// (x - mean) from the reduction kernel and read both back, four float
// passes over the activation where the bf16 inputs take three bytes an
// element.
#pragma once

#include <unordered_set>
#include <vector>

#include "segment/merge_groups.h"

namespace nvfuse {

// `groups`: merge_into_kernel_groups' result for `exprs`. A value that a
// group reads from another is computed by the reader itself when it is
// elementwise work (pointwise ops, casts, broadcasts, expands) on fusion
// inputs alone, no fusion output, read only by `exprs`; when the inputs
// the reader would read anew take no more bytes an element than the value
// it no longer reads (and its share of the write no longer made); and when
// every reader so extended is still one kernel (`accepts`). Every reader
// takes the work or none does. A group that made the value keeps its
// work only if it reads it too, and a group left empty is dropped.
// Returns the groups; the exprs every reader computes go into
// `recomputed` (their results are no segment's output).
std::vector<MergedGroup> recompute_input_work(const Fusion& fusion,
    const std::vector<const Expr*>& exprs, std::vector<MergedGroup> groups,
    const GroupCheck& accepts, std::unordered_set<const Expr*>& recomputed);

}  // namespace nvfuse
