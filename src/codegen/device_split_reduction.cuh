// nvfuse device runtime, split reductions: the partial results that the
// blocks splitting a row (or a column group) write to the workspace, and
// the counter at which the last of them to arrive learns it combines them.
// Appended after device_reduction.cuh, in the same source.
namespace nvfuse {

// Inner split reductions keep each partial in 8-byte cells of the
// workspace; volatile loads read what other blocks wrote (they bypass L1).
template <typename T>
__device__ __forceinline__ void store_partial(char* cell, T v) {
  *reinterpret_cast<T*>(cell) = v;
}
template <typename T>
__device__ __forceinline__ T load_partial(const char* cell) {
  return *reinterpret_cast<const volatile T*>(cell);
}
template <typename T>
__device__ __forceinline__ void store_partial(char* cell, Welford<T> v) {
  store_partial(cell, v.sum);
  store_partial(cell + 8, v.m2);
  store_partial(cell + 16, v.count);
}
template <typename T>
struct PartialLoader {
  __device__ static T load(const char* cell) { return load_partial<T>(cell); }
};
template <typename T>
struct PartialLoader<Welford<T> > {
  __device__ static Welford<T> load(const char* cell) {
    return {load_partial<T>(cell), load_partial<T>(cell + 8), load_partial<T>(cell + 16)};
  }
};

// Outer split reductions keep their partials in planes: per partial row,
// one plane of 8 * rows bytes per accumulator field (a Welford state's
// sum, m2 and count; a plain reduction's value), its columns packed. A
// thread's kN adjacent columns of a field are then one vector store and
// load, where the 8-byte cells of each column (store_partial) made every
// field of every column its own 4-byte load at a 24-byte stride: the one
// block that combined 528 partial rows of a bf16 variance over 200704 x
// 256 read them for most of the kernel's 162 us (H200). The loads bypass
// L1 (ld.global.cg): other blocks of the launch wrote them.
template <int kN, typename U>
__device__ __forceinline__ void store_columns(char* at, const U (&v)[kN]) {
  constexpr int kBytes = kN * int(sizeof(U));
  if constexpr (kBytes % 16 == 0) {
    uint32 w[kBytes / 4];
    memcpy(w, v, kBytes);
#pragma unroll
    for (int i = 0; i < kBytes / 16; ++i) {
      asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(at + 16 * i),
          "r"(w[4 * i]), "r"(w[4 * i + 1]), "r"(w[4 * i + 2]), "r"(w[4 * i + 3])
          : "memory");
    }
  } else {
#pragma unroll
    for (int n = 0; n < kN; ++n) {
      reinterpret_cast<U*>(at)[n] = v[n];
    }
  }
}
template <int kN, typename U>
__device__ __forceinline__ void load_columns(const char* at, U (&v)[kN]) {
  constexpr int kBytes = kN * int(sizeof(U));
  if constexpr (kBytes % 16 == 0) {
    uint32 w[kBytes / 4];
#pragma unroll
    for (int i = 0; i < kBytes / 16; ++i) {
      asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];"
          : "=r"(w[4 * i]), "=r"(w[4 * i + 1]), "=r"(w[4 * i + 2]), "=r"(w[4 * i + 3])
          : "l"(at + 16 * i)
          : "memory");
    }
    memcpy(v, w, kBytes);
  } else {
#pragma unroll
    for (int n = 0; n < kN; ++n) {
      v[n] = load_partial<U>(at + n * int(sizeof(U)));
    }
  }
}

// True in the block that arrives last at `counter` (one counter per group of
// blocks that split a reduction); its threads then see every partial. That
// block resets the counter for the next launch (runtime/split_semaphores.h):
// every other block of the group has added to it already. Every block of
// the grid must call this.
__device__ __forceinline__ bool arrive_last(unsigned* counter, unsigned expected) {
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    last = atomicAdd(counter, 1u) == expected - 1;
    if (last) {
      atomicExch(counter, 0u);
    }
  }
  __syncthreads();
  __threadfence();
  return last;
}

}  // namespace nvfuse
