#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "ir/errors.h"
#include "schedule/fast_divider.h"

namespace nvfuse {
namespace {

// Dividends where rounding errors would show: around multiples of the
// divisor, powers of two, and the top of the 31-bit range.
std::vector<uint32_t> edge_dividends(uint32_t d) {
  std::vector<uint32_t> n = {0, 1, 2, d - 1, d, d + 1, 2 * d - 1, 2 * d};
  constexpr uint32_t kTop = (1u << 31) - 1;
  for (uint32_t k = 0; k < 64; ++k) {
    n.push_back(kTop - k);
    n.push_back((kTop / d) * d - (k % 2));  // the last multiple, and below it
  }
  for (int bit = 0; bit < 31; ++bit) {
    n.push_back((1u << bit) - 1);
    n.push_back(1u << bit);
  }
  return n;
}

TEST(FastDivider, MatchesDivisionOnEdgesAndRandomDividends) {
  std::vector<int64_t> divisors = {1, 2, 3, 5, 7, 16, 100, 127, 128, 129, 1600, 4095, 4096, 65535,
      65537, 1000003, (int64_t{1} << 30) + 1, (int64_t{1} << 31) - 1};
  std::mt19937 rng(7);
  std::uniform_int_distribution<int64_t> any_divisor(1, (int64_t{1} << 31) - 1);
  for (int k = 0; k < 200; ++k) {
    divisors.push_back(any_divisor(rng));
  }
  std::uniform_int_distribution<uint32_t> any_dividend(0, (1u << 31) - 1);
  for (int64_t divisor : divisors) {
    const FastDivider d = fast_divider_of(divisor);
    const auto dv = static_cast<uint32_t>(divisor);
    std::vector<uint32_t> dividends = edge_dividends(dv);
    for (int k = 0; k < 2000; ++k) {
      dividends.push_back(any_dividend(rng));
    }
    for (uint32_t n : dividends) {
      if (n >= (1u << 31)) {
        continue;  // wrapped edge values: outside the documented range
      }
      ASSERT_EQ(fast_divide(n, d), n / dv) << n << " / " << divisor;
    }
  }
}

TEST(FastDivider, ExhaustiveForSmallDivisors) {
  for (uint32_t dv = 1; dv <= 300; ++dv) {
    const FastDivider d = fast_divider_of(dv);
    for (uint32_t n = 0; n < 100000; ++n) {
      ASSERT_EQ(fast_divide(n, d), n / dv) << n << " / " << dv;
    }
  }
}

TEST(FastDivider, RejectsDivisorsOutsideTheRange) {
  EXPECT_THROW(fast_divider_of(0), Error);
  EXPECT_THROW(fast_divider_of(int64_t{1} << 31), Error);
}

}  // namespace
}  // namespace nvfuse
