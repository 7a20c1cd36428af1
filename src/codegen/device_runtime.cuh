// nvfuse device runtime: prepended to every generated kernel. It includes no
// header, so NVRTC needs no include path (a pip-installed NVRTC has none).
// Semantics follow torch's CUDA kernels where they differ from plain C++.
namespace nvfuse {

typedef long long int64;
typedef unsigned long long uint64;
typedef unsigned int uint32;
typedef unsigned short uint16;

// Half-precision storage types; math is done in float.
struct alignas(2) BFloat16 {
  uint16 bits;
};
struct alignas(2) Half {
  uint16 bits;
};

// std::is_same without <type_traits> (NVRTC has no headers here).
template <typename T, typename U>
struct SameType {
  static constexpr bool value = false;
};
template <typename T>
struct SameType<T, T> {
  static constexpr bool value = true;
};

template <typename T, int N, bool kBoolWords = SameType<T, bool>::value && N % 4 == 0>
struct alignas(sizeof(T) * N) Array {
  T val[N];
};

// Bools four to a 32-bit word as well, for lane_of: reading val[v], the
// compiler extracted the byte and sign-extended it before testing it (four
// instructions a lane where a test of the word is one; the attention
// prologue's causal mask, an issue-bound kernel).
template <int N>
struct alignas(N) Array<bool, N, true> {
  union {
    bool val[N];
    uint32 words[N / 4];
  };
};

// Lane v of a held vector (v a constant after unrolling). A byte of a bool
// vector other than 0 is true, as in torch. A bf16 lane is cut from its
// 32-bit word (kWords): read as a 16-bit value, the odd lane took a PRMT
// and a shift on its way to float where the word takes one LOP3 (RoPE's
// kernel, 18% fewer instructions). The reduction kernels of rows that draw
// random words with their loads read 16-bit lanes (kWords false): with
// words, ptxas laid out dropout + layer norm bf16's kernel anew (the
// dropout scale copied into each Philox path) and it fell from 89 to 70%
// of copy bandwidth on an H100; the attention prologue, drawing late, rose
// 71.5 -> 74, and the norms measured the same either way.
template <bool kWords = true, typename T, int N>
__device__ __forceinline__ T lane_of(const Array<T, N>& a, int v) {
  if constexpr (SameType<T, bool>::value && N % 4 == 0) {
    return (a.words[v >> 2] & (0xffu << (8 * (v & 3)))) != 0u;
  } else if constexpr (kWords && SameType<T, BFloat16>::value && N % 2 == 0) {
    uint32 word;
    memcpy(&word, &a.val[v & ~1], 4);
    return BFloat16{static_cast<uint16>((v & 1) ? word >> 16 : word & 0xffffu)};
  } else {
    return a.val[v];
  }
}

// A 16-byte load of an input the kernel never writes, through the
// read-only path (ld.global.nc): not ordered after the kernel's stores, so
// that the compiler may issue a thread's next group's loads before this
// group's stores (with plain loads it could not, the output might alias
// the input). kKeep asks L1 and L2 to keep the lines (evict_last), for an
// input that later elements read again (RoPE's cos and sin, one row of
// them per row of every head), so that the streaming inputs pass through
// L2 without pushing it out. Other sizes load plainly.
template <bool kKeep, typename A>
__device__ __forceinline__ A load_read_only(const A* p) {
#if __CUDA_ARCH__ >= 800
  if constexpr (sizeof(A) == 16) {
    uint32 w[4];
    if constexpr (kKeep) {
      uint64 policy;
      asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
      asm("ld.global.nc.L1::evict_last.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
          : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
          : "l"(p), "l"(policy));
    } else {
      asm("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];"
          : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
          : "l"(p));
    }
    A a;
    memcpy(&a, w, 16);
    return a;
  }
#endif
  return *p;
}

// load_read_only where `take` holds, zeros where not, as one predicated
// load: the address need not be valid where `take` is false (a pad's
// window outside its input), and no branch keeps the compiler from
// issuing a thread's other loads before this one returns.
template <bool kKeep, typename A>
__device__ __forceinline__ A load_read_only_if(const A* p, bool take) {
#if __CUDA_ARCH__ >= 800
  if constexpr (sizeof(A) == 16) {
    uint32 w[4];
    if constexpr (kKeep) {
      uint64 policy;
      asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
      asm("{\n .reg .pred p;\n setp.ne.b32 p, %5, 0;\n"
          " mov.b32 %0, 0;\n mov.b32 %1, 0;\n mov.b32 %2, 0;\n mov.b32 %3, 0;\n"
          " @p ld.global.nc.L1::evict_last.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %6;\n}"
          : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
          : "l"(p), "r"(static_cast<uint32>(take)), "l"(policy));
    } else {
      asm("{\n .reg .pred p;\n setp.ne.b32 p, %5, 0;\n"
          " mov.b32 %0, 0;\n mov.b32 %1, 0;\n mov.b32 %2, 0;\n mov.b32 %3, 0;\n"
          " @p ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];\n}"
          : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
          : "l"(p), "r"(static_cast<uint32>(take)));
    }
    A a;
    memcpy(&a, w, 16);
    return a;
  }
#endif
  A a{};
  if (take) {
    a = *p;
  }
  return a;
}

// ---- conversions: cast<To>(from), with torch's rounding ------------------

__device__ __forceinline__ float bf16_to_float(BFloat16 v) {
  return __uint_as_float(static_cast<uint32>(v.bits) << 16);
}
__device__ __forceinline__ BFloat16 float_to_bf16(float f) {
  BFloat16 r;
#if __CUDA_ARCH__ >= 800
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r.bits) : "f"(f));
#else
  uint32 u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    r.bits = 0x7fc0;  // NaN
  } else {
    u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
    r.bits = static_cast<uint16>(u >> 16);
  }
#endif
  return r;
}
__device__ __forceinline__ float half_to_float(Half v) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v.bits));
  return f;
}
__device__ __forceinline__ Half float_to_half(float f) {
  Half r;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r.bits) : "f"(f));
  return r;
}

// Every storage type widens to its math type first: float for half types.
template <typename T>
struct MathOf {
  typedef T type;
};
template <>
struct MathOf<BFloat16> {
  typedef float type;
};
template <>
struct MathOf<Half> {
  typedef float type;
};

__device__ __forceinline__ float widen(BFloat16 v) { return bf16_to_float(v); }
__device__ __forceinline__ float widen(Half v) { return half_to_float(v); }
template <typename T>
__device__ __forceinline__ T widen(T v) {
  return v;
}

template <typename To>
struct Cast {
  template <typename From>
  __device__ __forceinline__ static To from(From v) {
    return static_cast<To>(widen(v));
  }
};
template <>
struct Cast<bool> {
  template <typename From>
  __device__ __forceinline__ static bool from(From v) {
    return widen(v) != 0;
  }
};
// torch converts double to half types through float.
template <>
struct Cast<BFloat16> {
  template <typename From>
  __device__ __forceinline__ static BFloat16 from(From v) {
    return float_to_bf16(static_cast<float>(widen(v)));
  }
};
template <>
struct Cast<Half> {
  template <typename From>
  __device__ __forceinline__ static Half from(From v) {
    return float_to_half(static_cast<float>(widen(v)));
  }
};

template <typename To, typename From>
__device__ __forceinline__ To cast(From v) {
  return Cast<To>::from(v);
}

// ---- heavy math, called rather than inlined ---------------------------------
// The accurate libdevice functions below are long (range reduction, slow
// paths). Inlined, every element a thread holds gets its own copy, and
// NVRTC's time grows with the copies (a kernel of ten such ops at 16
// elements a thread took seconds to compile). Called
// (NVFUSE_CALL_HEAVY_MATH=1), each is compiled once per kernel, at a
// run-time cost in compute-bound kernels (emit_op.cpp says how much).
// Static: a kernel that calls none compiles none. emit_op.cpp's
// kCalledMath lists the same names.
#define NVFUSE_CALLED_MATH_1(d, f)                                                       \
  [[maybe_unused]] static __device__ __noinline__ float called_##f(float x) {            \
    return ::f(x);                                                                       \
  }                                                                                      \
  [[maybe_unused]] static __device__ __noinline__ double called_##d(double x) {          \
    return ::d(x);                                                                       \
  }
#define NVFUSE_CALLED_MATH_2(d, f)                                                       \
  [[maybe_unused]] static __device__ __noinline__ float called_##f(float x, float y) {   \
    return ::f(x, y);                                                                    \
  }                                                                                      \
  [[maybe_unused]] static __device__ __noinline__ double called_##d(double x, double y) { \
    return ::d(x, y);                                                                    \
  }
NVFUSE_CALLED_MATH_1(sin, sinf)
NVFUSE_CALLED_MATH_1(cos, cosf)
NVFUSE_CALLED_MATH_1(tan, tanf)
NVFUSE_CALLED_MATH_1(asin, asinf)
NVFUSE_CALLED_MATH_1(acos, acosf)
NVFUSE_CALLED_MATH_1(atan, atanf)
NVFUSE_CALLED_MATH_1(sinh, sinhf)
NVFUSE_CALLED_MATH_1(cosh, coshf)
NVFUSE_CALLED_MATH_1(tanh, tanhf)
NVFUSE_CALLED_MATH_1(asinh, asinhf)
NVFUSE_CALLED_MATH_1(acosh, acoshf)
NVFUSE_CALLED_MATH_1(atanh, atanhf)
NVFUSE_CALLED_MATH_1(erf, erff)
NVFUSE_CALLED_MATH_1(erfc, erfcf)
NVFUSE_CALLED_MATH_1(erfinv, erfinvf)
NVFUSE_CALLED_MATH_1(erfcinv, erfcinvf)
NVFUSE_CALLED_MATH_1(expm1, expm1f)
NVFUSE_CALLED_MATH_1(log1p, log1pf)
NVFUSE_CALLED_MATH_1(lgamma, lgammaf)
NVFUSE_CALLED_MATH_2(pow, powf)
NVFUSE_CALLED_MATH_2(atan2, atan2f)
NVFUSE_CALLED_MATH_2(fmod, fmodf)
#undef NVFUSE_CALLED_MATH_1
#undef NVFUSE_CALLED_MATH_2

// ---- classification --------------------------------------------------------

template <typename T>
__device__ __forceinline__ bool isnan_(T x) {
  return x != x;
}
__device__ __forceinline__ bool isinf_(float x) {
  return (__float_as_uint(x) & 0x7fffffffu) == 0x7f800000u;
}
__device__ __forceinline__ bool isinf_(double x) {
  return (static_cast<uint64>(__double_as_longlong(x)) & 0x7fffffffffffffffull) ==
      0x7ff0000000000000ull;
}
template <typename T>
__device__ __forceinline__ bool isinf_(T) {
  return false;  // integers and bool
}
template <typename T>
__device__ __forceinline__ bool isfinite_(T x) {
  return !isnan_(x) && !isinf_(x);
}
__device__ __forceinline__ bool signbit_(float x) {
  return (__float_as_uint(x) >> 31) != 0;
}
__device__ __forceinline__ bool signbit_(double x) {
  return __double_as_longlong(x) < 0;
}
template <typename T>
__device__ __forceinline__ bool signbit_(T x) {
  return x < 0;
}

// ---- arithmetic with torch's semantics -------------------------------------

// NaN-propagating, as torch.maximum / torch.minimum.
template <typename T>
__device__ __forceinline__ T maximum(T a, T b) {
  return isnan_(a) ? a : (isnan_(b) ? b : (a > b ? a : b));
}
template <typename T>
__device__ __forceinline__ T minimum(T a, T b) {
  return isnan_(a) ? a : (isnan_(b) ? b : (a < b ? a : b));
}
// One instruction on sm_80 and later (max.NaN / min.NaN) instead of two
// NaN tests, a compare and two selects: a max reduction (softmax,
// cross-entropy) spent ~5 issue slots per element on it. NaN-propagating
// as above; a NaN result is the canonical NaN rather than an input's.
__device__ __forceinline__ float maximum(float a, float b) {
#if __CUDA_ARCH__ >= 800
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
#else
  return maximum<float>(a, b);  // the template above
#endif
}
__device__ __forceinline__ float minimum(float a, float b) {
#if __CUDA_ARCH__ >= 800
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
#else
  return minimum<float>(a, b);  // the template above
#endif
}
// relu keeps NaN and takes -0.0 to +0.0, as torch.relu (clamp_min(x, 0),
// a max of x and 0 in ATen's CUDA kernel) does.
template <typename T>
__device__ __forceinline__ T relu(T x) {
  return x <= T(0) ? T(0) : x;
}

// Maxima, minima and relu of half-type values are exact in their type, so
// the code generators apply them without widening to float and rounding
// back (expr_statement.cpp): a bf16 max pool window took two widenings
// and a rounding a lane for one compare. Same results as the float forms
// above, NaN canonical as there; one instruction on sm_80 and later.
#if __CUDA_ARCH__ >= 800
#define NVFUSE_HALF_EXTREME(T, name, ptx)                                        \
  __device__ __forceinline__ T name(T a, T b) {                                 \
    T r;                                                                        \
    asm(ptx " %0, %1, %2;" : "=h"(r.bits) : "h"(a.bits), "h"(b.bits));          \
    return r;                                                                   \
  }
#else
#define NVFUSE_HALF_EXTREME(T, name, ptx)                                        \
  __device__ __forceinline__ T name(T a, T b) {                                 \
    return Cast<T>::from(name(widen(a), widen(b)));                             \
  }
#endif
NVFUSE_HALF_EXTREME(BFloat16, maximum, "max.NaN.bf16")
NVFUSE_HALF_EXTREME(BFloat16, minimum, "min.NaN.bf16")
NVFUSE_HALF_EXTREME(Half, maximum, "max.NaN.f16")
NVFUSE_HALF_EXTREME(Half, minimum, "min.NaN.f16")
#undef NVFUSE_HALF_EXTREME
// relu on the bits: a value with its sign set that is not a NaN (at most
// -inf's bits) becomes +0.0, as x <= 0 ? 0 : x does.
__device__ __forceinline__ BFloat16 relu(BFloat16 x) {
  return (x.bits >= 0x8000u && x.bits <= 0xff80u) ? BFloat16{0} : x;
}
__device__ __forceinline__ Half relu(Half x) {
  return (x.bits >= 0x8000u && x.bits <= 0xfc00u) ? Half{0} : x;
}
// sigmoid(x) = 1 / (1 + exp(-x)), the exponential correctly rounded as
// expf, the reciprocal approximate (__fdividef, within 2 ulp): a correctly
// rounded division is a Newton step and a branch around a slow path, and
// a SwiGLU kernel (x * sigmoid(x) * up, bf16) spent more issue slots on
// it than its loads and stores allow at the memory's rate. Where 1 +
// exp(-x) passes 2^126 (x below about -87) __fdividef gives 0, where the
// exact value is below 2^-126 anyway.
__device__ __forceinline__ float sigmoid(float x) { return __fdividef(1.0f, 1.0f + expf(-x)); }
__device__ __forceinline__ double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

template <typename T>
__device__ __forceinline__ T sign(T x) {
  return static_cast<T>((T(0) < x) - (x < T(0)));
}
// Python's remainder: the result has the divisor's sign.
__device__ __forceinline__ float remainder(float a, float b) {
  float r = fmodf(a, b);
  return (r != 0.0f && ((r < 0.0f) != (b < 0.0f))) ? r + b : r;
}
__device__ __forceinline__ double remainder(double a, double b) {
  double r = fmod(a, b);
  return (r != 0.0 && ((r < 0.0) != (b < 0.0))) ? r + b : r;
}
// Integer quotient and remainder (C's, truncating) defined where C leaves
// them undefined: the most negative value divided by -1 wraps to itself
// (two's complement, as torch's CUDA kernel computes it) with remainder 0.
// The reference evaluator computes the same (runtime/aten_pointwise.cpp).
template <typename T>
__device__ __forceinline__ T div_int(T a, T b) {
  return b == T(-1) ? static_cast<T>(0ULL - static_cast<unsigned long long>(a)) : a / b;
}
template <typename T>
__device__ __forceinline__ T mod_int(T a, T b) {
  return b == T(-1) ? T(0) : a % b;
}
template <typename T>
__device__ __forceinline__ T remainder(T a, T b) {
  T r = mod_int(a, b);
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
// Integer power by squaring (torch: negative exponents give 0 unless the
// base is 1 or -1).
template <typename T>
__device__ __forceinline__ T pow_int(T base, T exponent) {
  if (exponent < 0) {
    return base == 1 ? T(1) : (base == -1 ? ((exponent & 1) ? T(-1) : T(1)) : T(0));
  }
  T result = 1;
  while (exponent) {
    if (exponent & 1) {
      result *= base;
    }
    exponent >>= 1;
    base *= base;
  }
  return result;
}
template <typename T>
__device__ __forceinline__ T gcd(T a, T b) {
  a = a < 0 ? -a : a;
  b = b < 0 ? -b : b;
  while (b != 0) {
    T t = a % b;
    a = b;
    b = t;
  }
  return a;
}
// Shifts past the width give 0 (left) or the sign (right), as torch.
template <typename T>
__device__ __forceinline__ T shift_left(T a, T b) {
  return (b < 0 || b >= T(sizeof(T) * 8)) ? T(0) : static_cast<T>(a << b);
}
template <typename T>
__device__ __forceinline__ T shift_right(T a, T b) {
  return (b < 0 || b >= T(sizeof(T) * 8)) ? (a < 0 ? T(-1) : T(0))
                                          : static_cast<T>(a >> b);
}
template <typename T>
__device__ __forceinline__ T ceil_div(T a, T b) {
  return (a + b - 1) / b;
}
// torch.lerp's formula, exact at both ends; the first form for weights
// with |weight| < 0.5, as torch's is_lerp_weight_small (a weight of -inf
// takes the second form, which gives NaN where the first gives inf).
template <typename T>
__device__ __forceinline__ T lerp(T start, T end, T weight) {
  return (weight > T(-0.5) && weight < T(0.5)) ? start + weight * (end - start)
                           : end - (end - start) * (T(1) - weight);
}
// torch.clamp: NaN input stays NaN; NaN bounds propagate.
template <typename T>
__device__ __forceinline__ T clamp(T x, T lo, T hi) {
  return minimum(maximum(x, lo), hi);
}

// A slice bound with Python's rules: negative counts from the end, out of
// range clamps to [0, extent].
__device__ __forceinline__ int64 normalized_index(int64 i, int64 extent) {
  return i < 0 ? (i + extent > 0 ? i + extent : 0) : (i < extent ? i : extent);
}
// An index read from a tensor (select, gather, embedding): negative counts
// from the end; out-of-range ones are clamped into [0, extent) so a bad
// index reads a wrong element instead of faulting the context (torch
// raises a device-side assert there; see docs/api.md).
__device__ __forceinline__ int64 index_in_range(int64 i, int64 extent) {
  if (i < 0) {
    i += extent;
  }
  return i < 0 ? 0 : (i >= extent ? extent - 1 : i);
}

// The unsigned integer of `kBytes` bytes (no <type_traits> under NVRTC).
template <int kBytes> struct BitsOf;
template <> struct BitsOf<1> { typedef unsigned char Type; };
template <> struct BitsOf<2> { typedef unsigned short Type; };
template <> struct BitsOf<4> { typedef unsigned int Type; };
template <> struct BitsOf<8> { typedef unsigned long long Type; };

// True where a and b differ in any bit (+0 and -0 differ; a NaN and the
// same NaN do not).
template <typename T>
__device__ __forceinline__ bool differ_in_bits(T a, T b) {
  typename BitsOf<sizeof(T)>::Type x;
  typename BitsOf<sizeof(T)>::Type y;
  memcpy(&x, &a, sizeof(T));
  memcpy(&y, &b, sizeof(T));
  return x != y;
}

// A scatter's index into an axis of `extent` elements: wrapped once when
// negative (as index_in_range), -1 when still out of range. The kernel
// writes nothing for -1: clamping would overwrite an element in range.
__device__ __forceinline__ int64 scatter_index(int64 i, int64 extent) {
  if (i < 0) {
    i += extent;
  }
  return i >= 0 && i < extent ? i : -1;
}

// n / d for 0 <= n, d < 2^31 with the host's magic number (schedule/
// fast_divider.h): a multiply-high, an add and a shift instead of a divide.
struct FastDivider {
  uint32 magic;
  uint32 shift;
};
__device__ __forceinline__ int fast_div(int n, FastDivider d) {
  return static_cast<int>(
      (__umulhi(static_cast<uint32>(n), d.magic) + static_cast<uint32>(n)) >> d.shift);
}

// Whether kVec lanes at p (stride apart) can move as one aligned vector.
template <int kVec, typename T, typename Index>
__device__ __forceinline__ bool vector_ok(const T* p, Index stride) {
  return kVec == 1 ||
      (stride == 1 &&
       reinterpret_cast<unsigned long long>(p) % (sizeof(T) * kVec) == 0);
}

// The scan kernel's warp step: the sum of `value` over the lanes before
// `lane` (0 for lane 0), and in `total` the sum over all 32 lanes. Every
// lane of the warp must call it.
template <typename T>
__device__ __forceinline__ T warp_exclusive_sum(T value, int lane, T* total) {
  T inclusive = value;
#pragma unroll
  for (int offset = 1; offset < 32; offset <<= 1) {
    const T before = __shfl_up_sync(0xffffffffu, inclusive, offset);
    if (lane >= offset) {
      inclusive += before;
    }
  }
  *total = __shfl_sync(0xffffffffu, inclusive, 31);
  const T exclusive = __shfl_up_sync(0xffffffffu, inclusive, 1);
  return lane == 0 ? T(0) : exclusive;
}

}  // namespace nvfuse
