#include "runtime/scatter_sizes.h"

#include "ir/errors.h"

namespace nvfuse {

void check_scatter_sizes(const std::vector<int64_t>& in, const std::vector<int64_t>& index,
    const std::vector<int64_t>& src, int64_t dim) {
  for (size_t axis = 0; axis < index.size(); ++axis) {
    NVFUSE_INPUT_CHECK(index[axis] <= src[axis], "scatter: index has size ", index[axis],
        " at axis ", axis, " but src only ", src[axis],
        " (index may be no larger than src along any axis)");
    NVFUSE_INPUT_CHECK(static_cast<int64_t>(axis) == dim || index[axis] <= in[axis],
        "scatter: index has size ", index[axis], " at axis ", axis, " but the input only ",
        in[axis], " (index may be no larger than the input along any axis but dim ", dim, ")");
  }
}

}  // namespace nvfuse
