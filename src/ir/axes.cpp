#include "ir/axes.h"

#include <algorithm>

#include "ir/errors.h"

namespace nvfuse {

int64_t normalize_axis(int64_t axis, int64_t rank, std::string_view what) {
  NVFUSE_CHECK(axis >= -rank && axis < rank, what, ": axis ", axis,
      " is out of range for a tensor of rank ", rank, " (valid: ", -rank, " to ", rank - 1, ")");
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> normalize_axes(
    const std::vector<int64_t>& axes, int64_t rank, std::string_view what) {
  std::vector<int64_t> result;
  result.reserve(axes.size());
  for (int64_t axis : axes) {
    result.push_back(normalize_axis(axis, rank, what));
  }
  std::sort(result.begin(), result.end());
  NVFUSE_CHECK(std::adjacent_find(result.begin(), result.end()) == result.end(), what,
      ": an axis appears more than once");
  return result;
}

bool is_permutation(const std::vector<int64_t>& order) {
  std::vector<bool> seen(order.size(), false);
  for (int64_t v : order) {
    if (v < 0 || v >= static_cast<int64_t>(order.size()) || seen[v]) {
      return false;
    }
    seen[v] = true;
  }
  return true;
}

}  // namespace nvfuse
