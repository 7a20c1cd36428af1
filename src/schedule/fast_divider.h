// Division by a runtime divisor without a hardware divide: n / d as
// (umulhi(n, magic) + n) >> shift, exact for 0 <= n, d < 2^31 (Granlund and
// Montgomery; PyTorch's IntDivider). An int32 division by a value only
// known at launch costs ~20 instructions (float reciprocal and
// corrections); a coordinate kernel of rank 4 divides three times per
// element group, a sixth of a bf16 RoPE kernel's instructions.
#pragma once

#include <cstdint>

namespace nvfuse {

struct FastDivider {
  uint32_t magic = 1;
  uint32_t shift = 0;
};

// The magic number and shift for `divisor` in [1, 2^31).
FastDivider fast_divider_of(int64_t divisor);

// n / divisor the way the kernel computes it (for tests and host checks).
inline uint32_t fast_divide(uint32_t n, FastDivider d) {
  const uint32_t high = static_cast<uint32_t>((uint64_t{n} * d.magic) >> 32);
  return static_cast<uint32_t>((uint64_t{high} + n) >> d.shift);
}

}  // namespace nvfuse
