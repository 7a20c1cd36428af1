// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3") and nvfuse's mapping from (seed, offset, element index) to random
// values. The reference evaluator (on the host) and the coordinate kernel
// (on the device, NVRTC) both compute random ops with it, so an explicit
// (seed, offset) gives the same tensor on either: plain C++ without std::.
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define NVFUSE_PHILOX_FN __host__ __device__ inline
#else
#define NVFUSE_PHILOX_FN inline
#endif
#if !defined(__CUDACC_RTC__)
#include <math.h>  // sqrtf, logf, cosf, ceilf, floorf on the host (NVRTC has them built in)
#endif

namespace nvfuse_philox {

struct Words {
  unsigned int w[4];
};

// The high and low words of a * b from one 32x32->64 multiply. On the
// device it is spelled in PTX: from C++ (a 64-bit product, or a mul_hi and
// a separate a * b) ptxas issued an IMAD.WIDE plus an IMAD or an add per
// word, a third more of the integer pipe that dropout kernels are bound by.
NVFUSE_PHILOX_FN void mul_wide(unsigned int a, unsigned int b,
                               unsigned int* hi, unsigned int* lo) {
#if defined(__CUDA_ARCH__)
  asm("mul.lo.u32 %0, %2, %3;\n\tmul.hi.u32 %1, %2, %3;"
      : "=r"(*lo), "=r"(*hi)
      : "r"(a), "r"(b));
#else
  const unsigned long long product = static_cast<unsigned long long>(a) * b;
  *hi = static_cast<unsigned int>(product >> 32);
  *lo = static_cast<unsigned int>(product);
#endif
}

// Counter (c0..c3) under key (k0, k1), ten rounds.
NVFUSE_PHILOX_FN Words philox(
    unsigned int c0, unsigned int c1, unsigned int c2, unsigned int c3,
    unsigned int k0, unsigned int k1) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    unsigned int hi0, lo0, hi1, lo1;
    mul_wide(0xD2511F53u, c0, &hi0, &lo0);
    mul_wide(0xCD9E8D57u, c2, &hi1, &lo1);
    const unsigned int n0 = hi1 ^ c1 ^ k0;
    const unsigned int n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
  }
  return Words{{c0, c1, c2, c3}};
}

// The block of four words that holds `group`'s values: the counter is
// (group, offset), the key the seed.
NVFUSE_PHILOX_FN Words block(
    unsigned long long seed, unsigned long long offset,
    unsigned long long group) {
  return philox(
      static_cast<unsigned int>(group), static_cast<unsigned int>(group >> 32),
      static_cast<unsigned int>(offset), static_cast<unsigned int>(offset >> 32),
      static_cast<unsigned int>(seed), static_cast<unsigned int>(seed >> 32));
}

// A float in [0, 1) from 24 random bits.
NVFUSE_PHILOX_FN float unit_float(unsigned int word) {
  return static_cast<float>(word >> 8) * (1.0f / 16777216.0f);
}

// A double in [0, 1) from 53 random bits.
NVFUSE_PHILOX_FN double unit_double(unsigned int hi, unsigned int lo) {
  const unsigned long long bits =
      ((static_cast<unsigned long long>(hi) << 32) | lo) >> 11;
  return static_cast<double>(bits) * (1.0 / 9007199254740992.0);
}

// Element i of a uniform float tensor: word i % 4 of block i / 4.
NVFUSE_PHILOX_FN float uniform_float(
    unsigned long long seed, unsigned long long offset, unsigned long long i) {
  return unit_float(block(seed, offset, i / 4).w[i % 4]);
}

// The random words of kCount elements first, first + step, ... of a uniform
// float tensor (element i: word i % 4 of block i / 4; its unit float is
// unit_float(word)). Consecutive elements from a multiple of four share one
// block per four: a quarter of the Philox rounds, which a memory-bound
// kernel with dropout cannot otherwise afford.
template <int kCount>
NVFUSE_PHILOX_FN void unit_words(
    unsigned long long seed, unsigned long long offset,
    unsigned long long first, long long step, unsigned int* out) {
  if (kCount % 4 == 0 && step == 1 && first % 4 == 0) {
    for (int q = 0; q < kCount / 4; ++q) {
      const Words w = block(seed, offset, first / 4 + q);
      for (int k = 0; k < 4; ++k) {
        out[4 * q + k] = w.w[k];
      }
    }
    return;
  }
  for (int l = 0; l < kCount; ++l) {
    const unsigned long long i = first + static_cast<unsigned long long>(l * step);
    out[l] = block(seed, offset, i / 4).w[i % 4];
  }
}

// The same elements' unit floats.
template <int kCount>
NVFUSE_PHILOX_FN void unit_floats(
    unsigned long long seed, unsigned long long offset,
    unsigned long long first, long long step, float* out) {
  unsigned int words[kCount];
  unit_words<kCount>(seed, offset, first, step, words);
  for (int l = 0; l < kCount; ++l) {
    out[l] = unit_float(words[l]);
  }
}

// unit_float(word) < p, <= p, > p, >= p without the conversion (dropout's
// keep mask): the unit float is m * 2^-24 exactly, m = word >> 8 < 2^24,
// and p * 2^24 is exact, so m * 2^-24 < p iff m < ceil(p * 2^24), and
// m * 2^-24 <= p iff m < floor(p * 2^24) + 1. With p a constant the
// compiler folds the bound: one compare of the word per element where the
// float took a shift, a conversion, a multiply and a compare. A NaN p makes
// every compare false, as the float compares say.
NVFUSE_PHILOX_FN bool word_below(unsigned int word, unsigned int bound) {
  // m < bound iff word < bound * 2^8 (the low 8 bits cannot carry m past a
  // bound): one compare of the word, no shift, for bounds below 2^24.
  return bound >= 16777216u || word < (bound << 8);
}
NVFUSE_PHILOX_FN bool unit_below(unsigned int word, float p) {
  if (!(p > 0.0f)) {
    return false;
  }
  return p > 1.0f || word_below(word, static_cast<unsigned int>(ceilf(p * 16777216.0f)));
}
NVFUSE_PHILOX_FN bool unit_at_most(unsigned int word, float p) {
  if (!(p >= 0.0f)) {
    return false;
  }
  return p >= 1.0f ||
      word_below(word, static_cast<unsigned int>(floorf(p * 16777216.0f)) + 1u);
}
NVFUSE_PHILOX_FN bool unit_above(unsigned int word, float p) {
  return p == p && !unit_at_most(word, p);
}
NVFUSE_PHILOX_FN bool unit_at_least(unsigned int word, float p) {
  return p == p && !unit_below(word, p);
}

// Element i of a uniform double tensor, and the two uniforms of element i
// of a normal tensor: words 2(i % 2), 2(i % 2) + 1 of block i / 2.
NVFUSE_PHILOX_FN double uniform_double(
    unsigned long long seed, unsigned long long offset, unsigned long long i) {
  const Words b = block(seed, offset, i / 2);
  const int w = static_cast<int>(i % 2) * 2;
  return unit_double(b.w[w], b.w[w + 1]);
}

// Element i of a normal float tensor (Box-Muller): words 2(i % 2) and
// 2(i % 2) + 1 of block i / 2.
NVFUSE_PHILOX_FN float normal_float(
    unsigned long long seed, unsigned long long offset, unsigned long long i,
    float mean, float std) {
  const Words b = block(seed, offset, i / 2);
  const int w = static_cast<int>(i % 2) * 2;
  const float u1 = 1.0f - unit_float(b.w[w]);
  const float u2 = unit_float(b.w[w + 1]);
  return mean + std * sqrtf(-2.0f * logf(u1)) * cosf(6.2831853f * u2);
}

// Element i of a normal double tensor: all four words of block i.
NVFUSE_PHILOX_FN double normal_double(
    unsigned long long seed, unsigned long long offset, unsigned long long i,
    double mean, double std) {
  const Words b = block(seed, offset, i);
  const double u1 = 1.0 - unit_double(b.w[0], b.w[1]);
  const double u2 = unit_double(b.w[2], b.w[3]);
  return mean + std * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

// A random op's seed and offset as drawn at launch: by value, or, in a
// launch recorded into a CUDA graph, read from torch's generator state on
// the device (`graph_seed`, `graph_offset`), which each replay of the graph
// advances; `offset` is then the op's offset within the graph. The same
// scheme as torch's PhiloxCudaState, so a replay draws what a plain launch
// at the same generator state would.
NVFUSE_PHILOX_FN unsigned long long drawn_seed(const long long* graph_seed, long long seed) {
  return static_cast<unsigned long long>(graph_seed != nullptr ? *graph_seed : seed);
}
NVFUSE_PHILOX_FN unsigned long long drawn_offset(const long long* graph_offset, long long offset) {
  return static_cast<unsigned long long>(graph_offset != nullptr ? *graph_offset + offset : offset);
}

}  // namespace nvfuse_philox
