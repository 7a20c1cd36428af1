// Normalizing user-given axes (negative counts from the end) with errors
// that name the op and the valid range.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace nvfuse {

// `axis` in [-rank, rank) -> [0, rank). `what` names the op for the error.
int64_t normalize_axis(int64_t axis, int64_t rank, std::string_view what);
// Each axis normalized; duplicates rejected; the result sorted ascending.
std::vector<int64_t> normalize_axes(
    const std::vector<int64_t>& axes, int64_t rank, std::string_view what);
// True when `order` holds each of 0..size-1 exactly once.
bool is_permutation(const std::vector<int64_t>& order);

}  // namespace nvfuse
