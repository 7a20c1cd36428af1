#include "schedule/fast_divider.h"

#include "ir/errors.h"

namespace nvfuse {

FastDivider fast_divider_of(int64_t divisor) {
  NVFUSE_ASSERT(divisor >= 1 && divisor < (int64_t{1} << 31),
      "a fast divider needs a divisor in [1, 2^31), got ", divisor);
  FastDivider d;
  // The smallest shift with 2^shift >= divisor; the magic number then fits
  // 32 bits and the rounding error stays below one for n < 2^31.
  while ((int64_t{1} << d.shift) < divisor) {
    ++d.shift;
  }
  const uint64_t one = 1;
  d.magic =
      static_cast<uint32_t>(((one << 32) * ((one << d.shift) - static_cast<uint64_t>(divisor))) /
              static_cast<uint64_t>(divisor) +
          1);
  return d;
}

}  // namespace nvfuse
