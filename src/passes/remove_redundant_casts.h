#pragma once

namespace nvfuse {

class Fusion;

// cast(cast(x, B), C) -> cast(x, C) when x -> B is exact (B widens x's
// type), since rounding once from the exact value is what both compute.
// Frameworks emit such chains (bf16 -> float -> bf16) at every op boundary;
// removing them saves a conversion per element in generated kernels.
void remove_redundant_casts(Fusion& fusion);

}  // namespace nvfuse
