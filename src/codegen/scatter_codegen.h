// The scatter kernel's staged-row form (CoordinateParams::scatter_rows): for
// a scatter along the innermost axis whose output rows fit in shared
// memory, a block takes one output row at a time:
//   1. the input's row is copied into shared memory (coalesced, vectors
//      where aligned);
//   2. the block walks the index tensor's row, computing index and src
//      there (the group function, CoordinateValues::scatter into_row), and
//      writes each value into the staged row;
//   3. the staged row is written out (coalesced).
// Every write then lands in shared memory instead of a random 2 or 4
// bytes of global memory, and the input is read once by the kernel rather
// than copied by the executor first: the scattered form moved half its
// bytes as partial sectors (28% of the copy bandwidth on an H100 for half
// of each 8192-wide row overwritten, torch.compile 30-32%).
#pragma once

#include <string>

#include "ir/all_exprs.h"
#include "schedule/coordinate_params.h"

namespace nvfuse {

// The kernel function (coordinate_kernel_name) of the staged-row form; the
// group function (`group(args, g)`, over the index tensor's groups) comes
// before it. `row_extent`: the kernel's text for the output rows' length.
std::string scatter_rows_kernel(
    const ScatterOp& scatter, const CoordinateParams& params, const std::string& row_extent);

}  // namespace nvfuse
