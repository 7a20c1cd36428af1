// The sizes torch's scatter accepts, checked before a scatter runs (as a
// generated kernel, whose reads of src and writes past the output's end
// nothing else would stop, or on the reference evaluator, for the same
// error on either path).
#pragma once

#include <cstdint>
#include <vector>

namespace nvfuse {

// Throws InputError unless `index` is no larger than `src` along any axis
// and no larger than `in` along any axis but `dim`.
void check_scatter_sizes(const std::vector<int64_t>& in, const std::vector<int64_t>& index,
    const std::vector<int64_t>& src, int64_t dim);

}  // namespace nvfuse
