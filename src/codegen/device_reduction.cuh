// nvfuse device runtime, reductions: combine ops with their identities,
// Welford states, and reductions across the lanes of a row, a block, or the
// rows of a block (outer reductions). Appended after device_runtime.cuh.
namespace nvfuse {

template <typename T>
struct Limits;
template <>
struct Limits<float> {
  __device__ static float lowest() { return -__int_as_float(0x7f800000); }
  __device__ static float highest() { return __int_as_float(0x7f800000); }
  // 1 / b is a normal number: |b| in [2^-126, 2^126] (not 0, inf or NaN).
  __device__ static bool has_normal_reciprocal(float b) {
    return fabsf(b) >= 0x1p-126f && fabsf(b) <= 0x1p126f;
  }
};
template <>
struct Limits<double> {
  __device__ static double lowest() { return -__longlong_as_double(0x7ff0000000000000LL); }
  __device__ static double highest() { return __longlong_as_double(0x7ff0000000000000LL); }
  __device__ static bool has_normal_reciprocal(double b) {
    return fabs(b) >= 0x1p-1022 && fabs(b) <= 0x1p1022;
  }
};
template <>
struct Limits<int> {
  __device__ static int lowest() { return -2147483647 - 1; }
  __device__ static int highest() { return 2147483647; }
};
template <>
struct Limits<int64> {
  __device__ static int64 lowest() { return -9223372036854775807LL - 1; }
  __device__ static int64 highest() { return 9223372036854775807LL; }
};

template <typename T>
struct SumOp {
  __device__ static T identity() { return T(0); }
  __device__ T operator()(T a, T b) const { return a + b; }
};
template <typename T>
struct ProdOp {
  __device__ static T identity() { return T(1); }
  __device__ T operator()(T a, T b) const { return a * b; }
};
// NaN propagates, as torch.max / torch.min.
template <typename T>
struct MaxOp {
  __device__ static T identity() { return Limits<T>::lowest(); }
  __device__ T operator()(T a, T b) const { return maximum(a, b); }
};
template <typename T>
struct MinOp {
  __device__ static T identity() { return Limits<T>::highest(); }
  __device__ T operator()(T a, T b) const { return minimum(a, b); }
};

// Sum, sum of squared deviations from the mean, and count of a set of
// values. The sum (not the running mean) is kept so that a set holding an
// infinity has an infinite mean, as torch's, instead of inf - inf = NaN when
// sets merge.
template <typename T>
struct Welford {
  T sum;
  T m2;
  T count;
  __device__ T mean() const { return sum / count; }
};

// Chan et al.'s parallel combination of two sets.
template <typename T>
struct WelfordOp {
  __device__ static Welford<T> identity() { return {T(0), T(0), T(0)}; }
  __device__ Welford<T> operator()(Welford<T> a, Welford<T> b) const {
    if (a.count == T(0)) {
      return b;
    }
    if (b.count == T(0)) {
      return a;
    }
    // delta^2 * na * nb / n with delta = sb / nb - sa / na = t / (na * nb):
    // one division instead of three (merges run in every reduction step).
    const T count = a.count + b.count;
    const T t = b.sum * a.count - a.sum * b.count;
    const T scale = T(1) / (a.count * b.count * count);
    return {a.sum + b.sum, a.m2 + b.m2 + (t * scale) * t, count};
  }
};

// One more value into a running state (outer reductions walk value by
// value), for a walk whose states all hold the same count (an outer walk's
// kVec columns, which see the same rows): welford_step divides once a row
// step, where dividing the sum by the count for each value divided twice a
// value. The products sum * (1 / count) are within an ulp of the
// quotients. H200, channels-last ResNet-50 training (102 outer walks, most
// of them Welford): 10.6 -> 10.2 ms. The divisions were not what held
// these walks at a third of a sum-of-squares walk's bandwidth (bf16 over
// 200704 x 256: 330 against 123 us): one block combining every partial
// row was (store_columns below).
template <typename T>
struct WelfordStep {
  T old_reciprocal;  // 1 / count before the value; 0 for an empty state
  T new_reciprocal;  // 1 / (count + 1)
};
template <typename T>
__device__ __forceinline__ WelfordStep<T> welford_step(T count) {
  return {count > T(0) ? T(1) / count : T(0), T(1) / (count + T(1))};
}
template <typename T>
__device__ __forceinline__ Welford<T> welford_add(Welford<T> s, T x, WelfordStep<T> step) {
  const T old_mean = s.sum * step.old_reciprocal;
  s.count += T(1);
  s.sum += x;
  s.m2 += (x - old_mean) * (x - s.sum * step.new_reciprocal);
  return s;
}

// Division of many values by one that a whole row shares (softmax's sum):
// its reciprocal once per row, then one product per value instead of a
// division (a dozen instructions each, which bf16 softmax rows are bound
// by). a * (1 / b) is within 1.5 ulp of a / b while 1 / b is a normal
// number (Limits::has_normal_reciprocal); other divisors (0, inf, NaN,
// subnormals, the largest values) divide as written, so special values
// come out as IEEE division gives them.
template <typename T>
struct RowDivisor {
  T value;
  T reciprocal;
  bool by_reciprocal;
  __device__ explicit RowDivisor(T b)
      : value(b), reciprocal(T(1) / b), by_reciprocal(Limits<T>::has_normal_reciprocal(b)) {}
  __device__ T divide(T a) const { return by_reciprocal ? a * reciprocal : a / value; }
};

// Division by a row value that is NaN or at least one and far below 2^126
// (a softmax's sum of exp(y - max(y)), which holds exp(0) = 1; see
// schedule/value_signs.h): its reciprocal is normal or NaN, so the product
// needs none of RowDivisor's checks. Those cost a branch around every
// element (BSSY, BRA, BSYNC) that the compiler does not hoist out of the row.
template <typename T>
struct RowReciprocal {
  T reciprocal;
  __device__ explicit RowReciprocal(T b) : reciprocal(T(1) / b) {}
  __device__ T divide(T a) const { return a * reciprocal; }
};

// exp(x) of x <= 0, as softmax's exp(y - max(y)): the hardware's 2^x (two
// instructions where expf takes nine, which bf16 softmax rows are bound
// by). Its relative error, about 2^-22 plus |x| * 2^-24 from rounding
// x * log2(e), is an absolute error below 2^-24 on values at most 1
// (e^x * |x| <= 1/e): invisible next to a sum or a probability of them.
// torch.compile's Triton kernels take every fp32 exp this way. The .ftz
// form returns 0 for results below 2^-126 (x < -87.3), an absolute error
// below 1.2e-38; without it ptxas wraps each MUFU.EX2 in a compare and two
// predicated multiplies for subnormal results, which made the exp four
// instructions of the issue-bound bf16 rows instead of one.
__device__ __forceinline__ float exp_nonpositive(float x) {
  float result;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(result) : "f"(x * 1.4426950408889634f));
  return result;
}

// A max or min over the lanes of half-type vectors (BFloat16 or Half),
// taken on pairs packed in 32-bit words: the row max of a held bf16 row
// cast to float (cross-entropy, softmax). One max.NaN.bf16x2 per two lanes
// (ptxas folds two of them into a three-input VHMNMX) where the float path
// takes a conversion and an FMNMX per lane: the cross-entropy forward bf16
// kernel at 4096x8192 fell from 408 to 344 instructions a thread. Exact:
// every half value is a float and the max is one of its operands; a NaN
// propagates, as MaxOp's max.NaN.f32 does. Two words in flight, so that
// ptxas can pair them.
template <bool kMax, typename T>
struct PackedExtreme {
  static constexpr bool kBf16 = SameType<T, BFloat16>::value;
  uint32 words[2] = {identity(), identity()};

  static __device__ constexpr uint32 identity() {
    constexpr uint32 inf = kBf16 ? 0x7f80u : 0x7c00u;
    constexpr uint32 lane = kMax ? (inf | 0x8000u) : inf;  // -inf for a max
    return lane | (lane << 16);
  }
  static __device__ float lane_value(uint32 bits) { return widen(T{static_cast<uint16>(bits)}); }
  static __device__ uint32 combine(uint32 a, uint32 b) {
#if __CUDA_ARCH__ >= 800
    uint32 r;
    if constexpr (kBf16 && kMax) {
      asm("max.NaN.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    } else if constexpr (kBf16) {
      asm("min.NaN.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    } else if constexpr (kMax) {
      asm("max.NaN.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    } else {
      asm("min.NaN.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    }
    return r;
#else
    uint32 r = 0;
    for (int shift = 0; shift < 32; shift += 16) {
      const uint32 x = (a >> shift) & 0xffffu;
      const uint32 y = (b >> shift) & 0xffffu;
      const float fx = lane_value(x);
      const float fy = lane_value(y);
      const uint32 nan = kBf16 ? 0x7fc0u : 0x7e00u;
      const uint32 pick = fx != fx || fy != fy ? nan : ((kMax ? fx >= fy : fx <= fy) ? x : y);
      r |= pick << shift;
    }
    return r;
#endif
  }
  template <int N>
  __device__ void add(const Array<T, N>& a) {
    static_assert(N % 2 == 0, "packed pairs need an even vector width");
    uint32 w[N / 2];
    memcpy(w, a.val, sizeof(w));
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
      words[i & 1] = combine(words[i & 1], w[i]);
    }
  }
  __device__ float result() const {
    const uint32 w = combine(words[0], words[1]);
    const float low = lane_value(w & 0xffffu);
    const float high = lane_value(w >> 16);
    return kMax ? maximum(low, high) : minimum(low, high);
  }
};

template <typename T>
__device__ __forceinline__ T shfl_xor(T v, int mask) {
  return __shfl_xor_sync(0xffffffffu, v, mask);
}
template <typename T>
__device__ __forceinline__ Welford<T> shfl_xor(Welford<T> v, int mask) {
  return {shfl_xor(v.sum, mask), shfl_xor(v.m2, mask), shfl_xor(v.count, mask)};
}

// Two results reduced together (nested for more): the reductions of one
// phase pass the lanes, the block and the cluster once, with one barrier
// each, instead of once per reduction (layer-norm backward: two row sums).
template <typename A, typename B>
struct Pair {
  A first;
  B second;
};
template <typename A, typename B>
__device__ __forceinline__ Pair<A, B> shfl_xor(Pair<A, B> v, int mask) {
  return {shfl_xor(v.first, mask), shfl_xor(v.second, mask)};
}
template <typename OpA, typename OpB>
struct PairOp {
  __device__ static auto identity() {
    return Pair<decltype(OpA::identity()), decltype(OpB::identity())>{OpA::identity(),
                                                                      OpB::identity()};
  }
  template <typename A, typename B>
  __device__ Pair<A, B> operator()(Pair<A, B> a, Pair<A, B> b) const {
    return {OpA()(a.first, b.first), OpB()(a.second, b.second)};
  }
};

// Combines `v` across groups of kLanes adjacent lanes (kLanes <= 32, a power
// of two); every lane of the group gets the result. The whole warp calls it.
template <int kLanes, typename T, typename Op>
__device__ __forceinline__ T lane_reduce(T v, Op op) {
#pragma unroll
  for (int offset = kLanes / 2; offset > 0; offset /= 2) {
    v = op(v, shfl_xor(v, offset));
  }
  return v;
}

// Each warp's combined `v` into buffer[its warp], then the block's barrier.
template <typename T, typename Op>
__device__ __forceinline__ void publish_warp_values(T v, Op op, T* buffer) {
  v = lane_reduce<32>(v, op);
  if (threadIdx.x % 32 == 0) {
    buffer[threadIdx.x / 32] = v;
  }
  __syncthreads();
}

// After publish_warp_values: the calling warp's combination of every warp's
// value, the same butterfly in every warp.
template <int kWarps, typename T, typename Op>
__device__ __forceinline__ T combine_warp_values(const T* buffer, Op op) {
  const int lane = threadIdx.x % 32;
  if constexpr ((kWarps & (kWarps - 1)) == 0) {
    // Each group of kWarps lanes holds every warp's value.
    return lane_reduce<kWarps>(buffer[lane % kWarps], op);
  } else {
    return lane_reduce<32>(lane < kWarps ? buffer[lane] : Op::identity(), op);
  }
}

// Combines `v` across the block (kThreads threads, a multiple of 32); every
// thread gets the result. The whole block calls it. One barrier: each warp
// writes its value to one of two buffers, and after the barrier every warp
// combines all of them itself, by the same butterfly, so every thread gets
// the same value (the old way, warp 0 combining and publishing the result,
// took three barriers and two dependent shared-memory round trips per
// reduction: a softmax row waits on two reductions). Calls alternate
// buffers (`call` numbers them in the order the block makes them): a warp
// writing call n + 2's buffer has passed call n + 1's barrier, which no
// warp reaches before it has read call n's values.
template <int kThreads, typename T, typename Op>
__device__ __forceinline__ T block_reduce(T v, Op op, int call) {
  __shared__ T shared[2][kThreads / 32];
  T* buffer = shared[call & 1];
  publish_warp_values(v, op, buffer);
  return combine_warp_values<kThreads / 32>(buffer, op);
}

// A block's row's last reduction when only its first lane reads the result
// (a loss per row, which lane 0 writes): the warps' values meet in shared
// memory after one barrier, and only the first warp combines them. The
// other warps get false and leave the kernel, so the row's per-row math
// (a log, a division) runs in one warp instead of all of them: the last
// rows' math after their loads arrive is what a loss row's kernel takes
// past a bare read of its bytes. Its own buffer: no earlier block_reduce's
// buffer is written again, so one barrier suffices.
template <int kThreads, typename T, typename Op>
__device__ __forceinline__ bool reduce_into_first_warp(T& v, Op op) {
  __shared__ T partials[kThreads / 32];
  publish_warp_values(v, op, partials);
  if (threadIdx.x >= 32) {
    return false;
  }
  v = combine_warp_values<kThreads / 32>(partials, op);
  return true;
}

// A row's lanes: a group within a warp, or the whole block (`calls` counts
// the block's reductions: see block_reduce).
template <int kLanes, int kBlock, typename T, typename Op>
__device__ __forceinline__ T row_reduce(T v, Op op, int& calls) {
  if constexpr (kLanes <= 32) {
    return lane_reduce<kLanes>(v, op);
  } else {
    return block_reduce<kBlock>(v, op, calls++);
  }
}

// Width-generic kernels (ReductionParams::width_generic) take the lanes a
// row and the block from the launch. The same butterflies as above, in the
// same order, so results equal the compiled-in kernels' bit for bit; the
// offsets past the group are skipped by a branch every lane takes alike.
template <typename T, typename Op>
__device__ __forceinline__ T lane_reduce_at_launch(T v, Op op, int lanes) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) {
    if (offset < lanes) {
      v = op(v, shfl_xor(v, offset));
    }
  }
  return v;
}

// combine_warp_values for blockDim.x / 32 warps (a power of two).
template <typename T, typename Op>
__device__ __forceinline__ T combine_warp_values_at_launch(const T* buffer, Op op) {
  const int warps = blockDim.x / 32;
  return lane_reduce_at_launch(buffer[(threadIdx.x % 32) & (warps - 1)], op, warps);
}

// A width-generic kernel's row of `lanes` lanes (at most a warp; several
// rows a block).
template <typename T, typename Op>
__device__ __forceinline__ T row_reduce_in_warp(T v, Op op, int lanes) {
  return lane_reduce_at_launch(v, op, lanes);
}

// A width-generic kernel's row of a whole block (block_reduce's buffers,
// sized for the most warps a block has).
template <typename T, typename Op>
__device__ __forceinline__ T row_reduce_in_block(T v, Op op, int call) {
  __shared__ T shared[2][32];
  T* buffer = shared[call & 1];
  publish_warp_values(v, op, buffer);
  return combine_warp_values_at_launch(buffer, op);
}

template <typename T, typename Op>
__device__ __forceinline__ bool reduce_into_first_warp_at_launch(T& v, Op op) {
  __shared__ T partials[32];
  publish_warp_values(v, op, partials);
  if (threadIdx.x >= 32) {
    return false;
  }
  v = combine_warp_values_at_launch(partials, op);
  return true;
}

// A shared-memory pointer as the 32-bit address PTX's shared-memory
// instructions take.
__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

#if __CUDA_ARCH__ >= 800
// Staged rows (ReductionParams::staged): a thread copies its groups of the
// next row into shared memory with cp.async, which holds no register while
// the copy is in flight, and reads them back itself (no block barrier: each
// thread reads only what it copied). 16-byte pieces bypass L1 (.cg); the
// 4- and 8-byte ones of narrow vectors cannot.
template <typename A>
__device__ __forceinline__ void copy_async(A* shared, const A* global) {
  const unsigned to = shared_address(shared);
  const char* from = reinterpret_cast<const char*>(global);
  if constexpr (sizeof(A) % 16 == 0) {
#pragma unroll
    for (int i = 0; i < int(sizeof(A) / 16); ++i) {
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;"
                   :: "r"(to + 16 * i), "l"(from + 16 * i) : "memory");
    }
  } else {
    static_assert(sizeof(A) == 4 || sizeof(A) == 8, "staged groups are 4, 8 or 16n bytes");
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;"
                 :: "r"(to), "l"(from), "n"(int(sizeof(A))) : "memory");
  }
}
// Closes the copies issued since the last commit into one group.
__device__ __forceinline__ void copy_async_commit() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}
// Waits until at most kPending of this thread's committed groups are
// still in flight.
template <int kPending>
__device__ __forceinline__ void copy_async_wait() {
  asm volatile("cp.async.wait_group %0;" :: "n"(kPending) : "memory");
}
#endif

// A thread's staged groups of one row: group k at base[k * kBlock] (the
// block's threads side by side, so that a warp's 16-byte reads are
// conflict-free). Read by value, as the held registers were.
template <typename A, int kBlock>
struct StagedGroups {
  const A* base;
  __device__ A operator[](int k) const { return base[k * kBlock]; }
};

#if __CUDA_ARCH__ >= 900
// Asks L2 for `bytes` (a multiple of 16) from `global` (16-byte aligned)
// with one bulk prefetch: no registers wait for them. A streamed cluster
// row's block prefetches its part of the row before its chunks' loads.
__device__ __forceinline__ void prefetch_l2(const void* global, unsigned bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" :: "l"(global), "r"(bytes)
               : "memory");
}

// Thread block clusters: every thread of every block of the cluster
// arrives and waits (a block barrier too); writes before it are visible
// to the cluster's blocks after it.
__device__ __forceinline__ void cluster_sync() {
  asm volatile(
      "barrier.cluster.arrive.release.aligned;\n\t"
      "barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// The two halves of cluster_sync: a kernel whose blocks exchange values
// arrives at its start and waits before its first exchange, when every
// block of the cluster has started (shared memory of a block that has not
// started cannot be written).
__device__ __forceinline__ void cluster_arrive() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() {
  asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
}

// The cluster's blocks: this block's rank, and stores into the shared memory
// of block `rank` at `local`'s counterpart there.
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  return rank;
}
// The address in block `rank` of the cluster of this block's shared
// `address`.
__device__ __forceinline__ unsigned in_block(unsigned address, unsigned rank) {
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(address), "r"(rank));
  return remote;
}
template <typename T>
__device__ __forceinline__ void store_to_block(T* local, unsigned rank, const T& value) {
  static_assert(sizeof(T) % 4 == 0, "cluster values are stored in 4-byte words");
  const unsigned* words = reinterpret_cast<const unsigned*>(&value);
  const unsigned address = shared_address(local);
#pragma unroll
  for (int i = 0; i < int(sizeof(T) / 4); ++i) {
    asm volatile("st.shared::cluster.u32 [%0], %1;"
                 :: "r"(in_block(address + 4 * i, rank)), "r"(words[i]) : "memory");
  }
}

// The value at `local`'s counterpart in the shared memory of block `rank`.
template <typename T>
__device__ __forceinline__ T load_from_block(const T* local, unsigned rank) {
  static_assert(sizeof(T) % 4 == 0, "cluster values are loaded in 4-byte words");
  T value;
  unsigned* words = reinterpret_cast<unsigned*>(&value);
  const unsigned address = in_block(shared_address(local), rank);
#pragma unroll
  for (int i = 0; i < int(sizeof(T) / 4); ++i) {
    asm volatile("ld.shared::cluster.u32 %0, [%1];"
                 : "=r"(words[i]) : "r"(address + 4 * i) : "memory");
  }
  return value;
}

// Inner-outer partial clusters (ReductionParams::partial_cluster): the
// kCluster blocks' `n` partial values at `local` (the same shared memory
// offset in every block) combined in rank order into `out`, a partial row
// region in global memory; block rank q takes the q-th kCluster-th of
// them, so that every block reads and writes as much. Called between two
// cluster_syncs: the first makes every block's partials visible, the
// second keeps each block's shared memory alive while the others read it.
template <int kCluster, int kBlock, typename T, typename Op>
__device__ __forceinline__ void combine_cluster_partials(const T* local, int n, T* out, Op op) {
  const int part = (n + kCluster - 1) / kCluster;
  const int first = int(cluster_rank()) * part;
  const int end = first + part < n ? first + part : n;
  for (int i = first + int(threadIdx.x); i < end; i += kBlock) {
    T value = load_from_block(local + i, 0);
#pragma unroll
    for (int q = 1; q < kCluster; ++q) {
      value = op(value, load_from_block(local + i, q));
    }
    out[i] = value;
  }
}

// The cluster's kCluster values in `slots` combined in rank order.
template <int kCluster, typename T, typename Op>
__device__ __forceinline__ T combine_slots(const T* slots, Op op) {
  T result = slots[0];
#pragma unroll
  for (int r = 1; r < kCluster; ++r) {
    result = op(result, slots[r]);
  }
  return result;
}

// Combines the blocks' results `v` (the same in every thread of a block)
// across the kCluster blocks of the cluster, in rank order (every block
// gets the same, deterministic result); every thread gets it. Every thread
// calls it. Each block sends its value to slot `rank` of every block, so
// one barrier suffices: kSite numbers the call sites of a kernel so that no
// two share slots, and `round` (the row a cluster that walks several rows
// is on, 0 for the first; the same in every block) alternates two sets of
// slots, so that no block writes a slot again before its owner has read
// it: a block writing round n + 2's slots has passed round n + 1's barrier,
// which its owner reaches only after reading round n's.
template <int kCluster, int kSite, typename T, typename Op>
__device__ __forceinline__ T cluster_reduce(T v, Op op, int round) {
  __shared__ T slots[2][kCluster];
  if constexpr (kSite == 0) {
    if (round == 0) {
      cluster_wait();  // every block has started: see cluster_arrive
    }
  }
  T* round_slots = slots[round & 1];
  if (threadIdx.x < kCluster) {
    store_to_block(&round_slots[cluster_rank()], threadIdx.x, v);
  }
  cluster_sync();
  return combine_slots<kCluster>(round_slots, op);
}
// cluster_reduce for kernels whose clusters walk rows (staged and
// inner-outer rows): each block pushes its value into slot `rank` of every
// block with st.async, whose bytes complete on the receiver's mbarrier,
// and each block waits on its own mbarrier. No cluster barrier: its
// release half (MEMBAR.ALL.GPU in SASS) waits for every memory operation
// the thread has in flight, the next row's copies and the last row's
// stores among them. Round 0 of each site initializes the site's two
// mbarriers and passes one cluster barrier, so that no block pushes into a
// barrier not yet initialized. Slots are reused as in cluster_reduce: a
// block pushes round n + 2's values only after every block has pushed
// round n + 1's, which each does after its block barrier (the row's
// block_reduce: a cluster row's lanes are its block) has seen every thread
// of it done reading round n's slots.
template <int kCluster, int kSite, typename T, typename Op>
__device__ __forceinline__ T cluster_reduce_pushed(T v, Op op, int round) {
  static_assert(sizeof(T) % 4 == 0, "cluster values are pushed in 4-byte words");
  __shared__ __align__(8) T slots[2][kCluster];
  __shared__ __align__(8) unsigned long long arrived[2];
  if (round == 0) {
    if constexpr (kSite == 0) {
      cluster_wait();  // every block has started: see cluster_arrive
    }
    if (threadIdx.x == 0) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(shared_address(&arrived[0])) : "memory");
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(shared_address(&arrived[1])) : "memory");
      asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    cluster_sync();
  }
  const int set = round & 1;
  const unsigned barrier = shared_address(&arrived[set]);
  if (threadIdx.x == 0) {
    // The one arrival of this phase; the pushes complete its bytes.
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                 :: "r"(barrier), "r"(unsigned(kCluster * sizeof(T))) : "memory");
  }
  if (threadIdx.x < kCluster) {
    const unsigned slot = in_block(shared_address(&slots[set][cluster_rank()]), threadIdx.x);
    const unsigned remote_barrier = in_block(barrier, threadIdx.x);
    const unsigned* words = reinterpret_cast<const unsigned*>(&v);
#pragma unroll
    for (int i = 0; i < int(sizeof(T) / 4); ++i) {
      asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];"
                   :: "r"(slot + 4 * i), "r"(words[i]), "r"(remote_barrier) : "memory");
    }
  }
  // Set `set` completes a phase every second round: round n's is phase n / 2.
  const unsigned parity = unsigned(round >> 1) & 1u;
  unsigned done = 0;
  while (!done) {
    asm volatile(
        "{\n\t.reg .pred p;\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
        "selp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(done) : "r"(barrier), "r"(parity) : "memory");
  }
  return combine_slots<kCluster>(slots[set], op);
}
#endif

// Outer reductions: thread (x, y) = threadIdx.x % kX, threadIdx.x / kX;
// combines `v` over y (kY a power of two); every thread gets its column's
// result. The whole block calls it.
template <int kX, int kY, typename T, typename Op>
__device__ __forceinline__ T column_reduce(T v, Op op) {
  __shared__ T shared[kX * kY];
  const int x = threadIdx.x % kX;
  const int y = threadIdx.x / kX;
  shared[y * kX + x] = v;
  __syncthreads();
#pragma unroll
  for (int stride = kY / 2; stride > 0; stride /= 2) {
    if (y < stride) {
      shared[y * kX + x] = op(shared[y * kX + x], shared[(y + stride) * kX + x]);
    }
    __syncthreads();
  }
  const T result = shared[x];
  __syncthreads();
  return result;
}

// column_reduce for each of a thread's kN values (its vector's columns):
// one write, then thread row y combines values y, y + kY, ... over the kY
// rows in row order, so three barriers serve all kN values instead of
// log2(kY) + 2 for each (a bf16 outer sum's last block waited on 32). Past
// 16 KB of shared memory (Welford states of 16-value vectors), value by
// value.
template <int kX, int kY, int kN, typename T, typename Op>
__device__ __forceinline__ void column_reduce_all(T (&v)[kN], Op op) {
  if constexpr (kY * kN * kX * sizeof(T) > 16384) {
#pragma unroll
    for (int n = 0; n < kN; ++n) {
      v[n] = column_reduce<kX, kY>(v[n], op);
    }
  } else {
    constexpr int kPerRow = (kN + kY - 1) / kY;
    __shared__ T shared[kY][kN][kX];
    const int x = threadIdx.x % kX;
    const int y = threadIdx.x / kX;
#pragma unroll
    for (int n = 0; n < kN; ++n) {
      shared[y][n][x] = v[n];
    }
    __syncthreads();
    T combined[kPerRow];
#pragma unroll
    for (int i = 0; i < kPerRow; ++i) {
      const int n = y + i * kY;
      if (n < kN) {
        combined[i] = shared[0][n][x];
#pragma unroll
        for (int r = 1; r < kY; ++r) {
          combined[i] = op(combined[i], shared[r][n][x]);
        }
      }
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kPerRow; ++i) {
      const int n = y + i * kY;
      if (n < kN) {
        shared[0][n][x] = combined[i];
      }
    }
    __syncthreads();
#pragma unroll
    for (int n = 0; n < kN; ++n) {
      v[n] = shared[0][n][x];
    }
    __syncthreads();  // the next call's writes wait for these reads
  }
}

// column_reduce_all for a block of kThreads threads whose shape is chosen
// at run time (the finishing kernel's, by its partial rows): x_threads
// columns of threads, kThreads / x_threads rows of them (at least kN).
// Thread row y combines value y over the rows in row order, as
// column_reduce_all does.
template <int kThreads, int kN, typename T, typename Op>
__device__ __forceinline__ void column_reduce_shaped(T (&v)[kN], Op op, int x_threads) {
  __shared__ T shared[kThreads * kN];
  const int x = threadIdx.x % x_threads;
  const int y = threadIdx.x / x_threads;
  const int y_threads = kThreads / x_threads;
#pragma unroll
  for (int n = 0; n < kN; ++n) {
    shared[(y * kN + n) * x_threads + x] = v[n];
  }
  __syncthreads();
  T combined = v[0];
  if (y < kN) {
    combined = shared[y * x_threads + x];
#pragma unroll 8
    for (int r = 1; r < y_threads; ++r) {
      combined = op(combined, shared[(r * kN + y) * x_threads + x]);
    }
  }
  __syncthreads();
  if (y < kN) {
    shared[y * x_threads + x] = combined;
  }
  __syncthreads();
#pragma unroll
  for (int n = 0; n < kN; ++n) {
    v[n] = shared[n * x_threads + x];
  }
  __syncthreads();  // the next call's writes wait for these reads
}

// The first statement of a kernel that the runtime may launch as the
// programmatic dependent of the kernel before it (runtime/kernel_launch.h,
// programmatic_launches): waits until that kernel has finished and its
// writes are visible. Without such a launch it returns at once.
__device__ __forceinline__ void wait_for_previous_grid() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

}  // namespace nvfuse
