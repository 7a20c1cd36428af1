#include "runtime/layout_copies.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <utility>

#include "ir/errors.h"
#include "runtime/kernel_launch.h"
#include "runtime/cuda/kernel_cache.h"

namespace nvfuse {

namespace {

// What one launch's parameter block holds: up to kMaxParts tensors of up to
// kMaxRank axes after merging (fits the 4 KiB every architecture takes).
constexpr int kMaxRank = 5;
constexpr int kMaxParts = 48;
constexpr int kThreads = 256;
constexpr int kPerThread = 4;  // consecutive destination elements
constexpr int64_t kPerBlock = int64_t{kThreads} * kPerThread;

// One tensor's copy, as the kernel reads it: the destination's axes in
// memory order (outermost first, padded in front with size-1 axes), and
// the source's stride along each. A padded copy's destination is larger
// than its source along one axis, whose elements from the source's extent
// on are zeros: `zeros_from` holds that axis (its top 3 bits) and the
// extent (the rest); 0 for a copy without padding. `row_vector` is 0 for
// a copy walked element by element, else the vector width (elements) of a
// copy walked as rows (kRowWalkFrom below), `row_chunks` its blocks a row.
struct Part {
  uint64_t source = 0;
  uint64_t destination = 0;
  int64_t first_block = 0;
  uint32_t numel = 0;
  uint32_t zeros_from = 0;
  uint32_t sizes[kMaxRank] = {};
  uint32_t source_strides[kMaxRank] = {};
  uint32_t row_vector = 0;
  uint32_t row_chunks = 0;
};
static_assert(sizeof(Part) == 80, "the kernel source's Part");

struct Params {
  int32_t count = 0;
  int32_t unused = 0;
  Part parts[kMaxParts];
};
static_assert(sizeof(Params) <= 4096, "a launch's parameter block");

// Copies of rows (at most two axes after merging, the source's rows
// contiguous, at least kRowWalkFrom elements long) are walked as rows: a
// padded GEMM result's rows copied dense, dense rows copied padded. The
// element walk divides out each thread's coordinates for its four
// elements; a row walk's block copies one chunk of one row, with no
// division but the block's row. Each thread copies kRowWalkBytes, one
// 16-byte vector where both tensors' rows are 16-byte aligned, else as
// single elements 256 apart, all loads before the stores.
//
// Measured on an H200, 8,192 bf16 rows (% of copy bandwidth, padded rows
// to dense ones / dense to padded): 30,522 columns 83 / 87 (the element
// walk: 57), 50,257 83 / 87, 30,520 (16-byte rows) 96 / 96, 32,768 97 /
// 97. Vectors of 4 or 8 bytes, where rows allow them, were no faster than
// single elements (30,522 columns in 4-byte vectors: 67 / 67), and more
// bytes a thread were slower (64 bytes: 35 / 35 for 4-byte vectors, 76 /
// 78 for elements).
constexpr int64_t kRowWalkFrom = 2048;
constexpr int kRowWalkBytes = 16;

int row_walk_steps(int vector_bytes) { return std::max(1, kRowWalkBytes / vector_bytes); }

constexpr const char* kKernelSource = R"(
#define RANK 5
struct Part {
  unsigned long long source, destination;
  long long first_block;
  unsigned int numel, zeros_from;
  unsigned int sizes[RANK], source_strides[RANK];
  unsigned int row_vector, row_chunks;
};
struct Params { int count, unused; Part parts[48]; };
template <int N>
struct alignas(N * sizeof(ELEMENT)) Vector { ELEMENT v[N]; };

// A padded copy's axis whose coordinates from its extent on are zeros
// (RANK: none), and that extent.
__device__ __forceinline__ int padded_axis_of(const Part& part) {
  return part.zeros_from == 0u ? RANK : int(part.zeros_from >> 29);
}
__device__ __forceinline__ unsigned int extent_of(const Part& part) {
  return part.zeros_from & 0x1fffffffu;
}

// The row walk: block `block` of the part copies chunk `block % row_chunks`
// of row `block / row_chunks`; each thread loads ROW_WALK_BYTES in kSteps
// vectors of N elements 256 vectors apart, then stores them.
template <int N>
__device__ __forceinline__ void copy_row_chunk(const Part& part, unsigned int block) {
  constexpr int kBytes = N * int(sizeof(ELEMENT));
  constexpr int kSteps = kBytes >= ROW_WALK_BYTES ? 1 : ROW_WALK_BYTES / kBytes;
  const unsigned int cols = part.sizes[RANK - 1];
  const unsigned int row = block / part.row_chunks;
  const unsigned int first =
      (block - row * part.row_chunks) * (256u * kSteps * N) + threadIdx.x * N;
  const int padded_axis = padded_axis_of(part);
  unsigned int source_end = padded_axis == RANK - 1 ? extent_of(part) : cols;
  if (padded_axis == RANK - 2 && row >= extent_of(part)) source_end = 0;
  const ELEMENT* source = reinterpret_cast<const ELEMENT*>(part.source) +
      (unsigned long long)row * part.source_strides[RANK - 2];
  ELEMENT* destination = reinterpret_cast<ELEMENT*>(part.destination) +
      (unsigned long long)row * cols;
  Vector<N> values[kSteps];
#pragma unroll
  for (int s = 0; s < kSteps; ++s) {
    const unsigned int col = first + unsigned(s) * 256u * N;
    if (col + N <= source_end) {
      values[s] = *reinterpret_cast<const Vector<N>*>(source + col);
    } else {
#pragma unroll
      for (int k = 0; k < N; ++k) {
        values[s].v[k] = col + k < source_end ? source[col + k] : static_cast<ELEMENT>(0);
      }
    }
  }
#pragma unroll
  for (int s = 0; s < kSteps; ++s) {
    const unsigned int col = first + unsigned(s) * 256u * N;
    if (col + N <= cols) {
      *reinterpret_cast<Vector<N>*>(destination + col) = values[s];
    } else {
#pragma unroll
      for (int k = 0; k < N; ++k) {
        if (col + k < cols) destination[col + k] = values[s].v[k];
      }
    }
  }
}

// The element walk: four consecutive destination elements a thread, their
// source coordinates divided out once, then carried.
__device__ __forceinline__ void copy_four_elements(const Part& part, unsigned int block) {
  const unsigned int first = (block * 256u + threadIdx.x) * 4u;
  if (first >= part.numel) return;
  unsigned int coordinate[RANK];
  unsigned int rest = first, offset = 0;
#pragma unroll
  for (int d = RANK - 1; d >= 0; --d) {
    coordinate[d] = rest % part.sizes[d];
    rest /= part.sizes[d];
    offset += coordinate[d] * part.source_strides[d];
  }
  const ELEMENT* source = reinterpret_cast<const ELEMENT*>(part.source);
  ELEMENT* destination = reinterpret_cast<ELEMENT*>(part.destination) + first;
  const unsigned int count = min(4u, part.numel - first);
  const int padded_axis = padded_axis_of(part);
  const unsigned int extent = extent_of(part);
  Vector<4> values;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    bool zero = false;
#pragma unroll
    for (int d = 0; d < RANK; ++d) {
      if (d == padded_axis && coordinate[d] >= extent) zero = true;
    }
    if (k < count) values.v[k] = zero ? static_cast<ELEMENT>(0) : source[offset];
#pragma unroll
    for (int d = RANK - 1; d >= 0; --d) {
      offset += part.source_strides[d];
      if (++coordinate[d] < part.sizes[d] || d == 0) break;
      offset -= part.sizes[d] * part.source_strides[d];
      coordinate[d] = 0;
    }
  }
  if (count == 4) {
    *reinterpret_cast<Vector<4>*>(destination) = values;
  } else {
    for (unsigned int k = 0; k < count; ++k) destination[k] = values.v[k];
  }
}

extern "C" __global__ void __launch_bounds__(256) KERNEL_NAME(const __grid_constant__ Params p) {
  // The part whose blocks hold this one: the last that starts at or before it.
  int low = 0, high = p.count - 1;
  while (low < high) {
    const int middle = (low + high + 1) / 2;
    if (p.parts[middle].first_block <= (long long)blockIdx.x) low = middle; else high = middle - 1;
  }
  const Part& part = p.parts[low];
  const unsigned int block = (unsigned int)(blockIdx.x - part.first_block);
  if (part.row_vector == 0) {
    copy_four_elements(part, block);
  } else if (part.row_vector == 1) {
    copy_row_chunk<1>(part, block);
  } else {
    copy_row_chunk<16 / sizeof(ELEMENT)>(part, block);
  }
}
)";

const char* element_type_of(int element_size) {
  switch (element_size) {
    case 1:
      return "unsigned char";
    case 2:
      return "unsigned short";
    case 4:
      return "unsigned int";
    case 8:
      return "unsigned long long";
    default:
      NVFUSE_INPUT_CHECK(false, "element_size: expected 1, 2, 4 or 8 bytes, got ", element_size);
  }
  return "";
}

// Whether `strides` lay out `sizes` densely: sorted by stride, each axis
// longer than 1 steps over exactly the axes inside it (negative strides
// never do).
bool is_dense(at::IntArrayRef sizes, const std::vector<int64_t>& strides) {
  if (std::find(sizes.begin(), sizes.end(), 0) != sizes.end()) {
    return true;  // no element: any strides lay it out
  }
  if (std::any_of(strides.begin(), strides.end(), [](int64_t s) { return s < 0; })) {
    return false;
  }
  std::vector<size_t> order(sizes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(
      order.begin(), order.end(), [&](size_t a, size_t b) { return strides[a] > strides[b]; });
  int64_t expected = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    if (sizes[*it] == 1) {
      continue;
    }
    if (strides[*it] != expected) {
      return false;
    }
    expected *= sizes[*it];
  }
  return true;
}

// Whether `part` is walked as rows (kRowWalkFrom), in 16-byte vectors or
// single elements: 16-byte vectors where both tensors' first elements and
// rows are aligned to them.
void plan_row_walk(Part& part, int element_size) {
  const int rows_axis = kMaxRank - 2, cols_axis = kMaxRank - 1;
  for (int d = 0; d < rows_axis; ++d) {
    if (part.sizes[d] != 1) {
      return;
    }
  }
  const int64_t cols = part.sizes[cols_axis];
  if (part.source_strides[cols_axis] != 1 || cols < kRowWalkFrom) {
    return;
  }
  uint64_t bits = part.source | part.destination;
  if (part.sizes[rows_axis] > 1) {
    bits |= uint64_t{part.source_strides[rows_axis]} * element_size;
    bits |= static_cast<uint64_t>(cols) * element_size;
  }
  const int vector_bytes = bits % 16 == 0 ? 16 : element_size;
  const int vector = vector_bytes / element_size;
  const int64_t chunk = int64_t{kThreads} * row_walk_steps(vector_bytes) * vector;
  part.row_vector = static_cast<uint32_t>(vector);
  part.row_chunks = static_cast<uint32_t>((cols + chunk - 1) / chunk);
}

int64_t blocks_of(const Part& part) {
  if (part.row_vector != 0) {
    return int64_t{part.row_chunks} * part.sizes[kMaxRank - 2];
  }
  return (part.numel + kPerBlock - 1) / kPerBlock;
}

// `source`'s copy into `destination` as a Part (first_block unset), or
// nullopt when it needs more axes or wider indices than the kernel has.
// The destination is larger than the source along `padded_axis` where it
// is not -1 (a padded copy; zeros past the source's extent), and the same
// size along every other axis.
std::optional<Part> part_of(
    const at::Tensor& source, const at::Tensor& destination, int64_t padded_axis = -1) {
  std::vector<int64_t> axes;
  for (int64_t d = 0; d < destination.dim(); ++d) {
    if (destination.size(d) > 1) {
      axes.push_back(d);
    }
  }
  std::stable_sort(axes.begin(), axes.end(),
      [&](int64_t a, int64_t b) { return destination.stride(a) > destination.stride(b); });
  // Merges an axis into the one outside it where the source steps over
  // both as one: the channels-last weight's kernel rows and columns, the
  // columns of rows padded at their end. A padded axis takes the axes
  // inside it (its extent counts their elements too) but is never taken:
  // its padding would fall inside the merged axis.
  std::vector<int64_t> sizes, strides;
  int64_t merged_padded = -1, extent = 0;
  for (int64_t axis : axes) {
    const int64_t size = destination.size(axis), stride = source.stride(axis);
    const bool padded = axis == padded_axis;
    if (!sizes.empty() && !padded && strides.back() == stride * size) {
      sizes.back() *= size;
      strides.back() = stride;
      if (merged_padded == static_cast<int64_t>(sizes.size()) - 1) {
        extent *= size;
      }
    } else {
      sizes.push_back(size);
      strides.push_back(stride);
      if (padded) {
        merged_padded = static_cast<int64_t>(sizes.size()) - 1;
        extent = source.size(axis);
      }
    }
  }
  int64_t last_offset = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    const int64_t last = static_cast<int64_t>(k) == merged_padded ? extent : sizes[k];
    last_offset += (last - 1) * strides[k];
  }
  constexpr int64_t kLimit = std::numeric_limits<int32_t>::max();
  // Indices past the last element (a block's last chunk) stay in 32 bits.
  constexpr int64_t kLargestBlock = std::max<int64_t>(kPerBlock, int64_t{kThreads} * kRowWalkBytes);
  if (static_cast<int>(sizes.size()) > kMaxRank || destination.numel() > kLimit - kLargestBlock ||
      last_offset > kLimit || extent >= (int64_t{1} << 29)) {
    return std::nullopt;
  }
  Part part;
  part.source = reinterpret_cast<uint64_t>(source.const_data_ptr());
  part.destination = reinterpret_cast<uint64_t>(destination.mutable_data_ptr());
  part.numel = static_cast<uint32_t>(destination.numel());
  const size_t pad = kMaxRank - sizes.size();
  for (int d = 0; d < kMaxRank; ++d) {
    const bool padded = static_cast<size_t>(d) < pad;
    part.sizes[d] = padded ? 1 : static_cast<uint32_t>(sizes[d - pad]);
    part.source_strides[d] = padded ? 0 : static_cast<uint32_t>(strides[d - pad]);
  }
  if (merged_padded >= 0) {
    part.zeros_from =
        (static_cast<uint32_t>(merged_padded + pad) << 29) | static_cast<uint32_t>(extent);
  }
  plan_row_walk(part, static_cast<int>(source.element_size()));
  return part;
}

// The grouped copy kernel for `element_size` on `device`, loaded once per
// process: load_kernel's key is a hash of the source, which would be built
// and hashed on every call (padded GEMM operands are copied every step).
const LoadedKernel& layout_copies_kernel(int element_size, int device) {
  static std::mutex mutex;
  static std::map<std::pair<int, int>, const LoadedKernel*> loaded;
  const std::lock_guard<std::mutex> lock(mutex);
  const LoadedKernel*& kernel = loaded[{element_size, device}];
  if (kernel == nullptr) {
    kernel = &load_kernel(
        layout_copies_source(element_size), layout_copies_kernel_name(element_size), device);
  }
  return *kernel;
}

void launch_parts(std::vector<Part>& parts, int element_size, c10::Device device) {
  const LoadedKernel& kernel = layout_copies_kernel(element_size, device.index());
  for (size_t start = 0; start < parts.size(); start += kMaxParts) {
    const size_t end = std::min(parts.size(), start + kMaxParts);
    Params params;
    params.count = static_cast<int32_t>(end - start);
    int64_t blocks = 0;
    for (size_t k = start; k < end; ++k) {
      parts[k].first_block = blocks;
      blocks += blocks_of(parts[k]);
      params.parts[k - start] = parts[k];
    }
    std::vector<uint64_t> block((sizeof(Params) + 7) / 8);
    std::memcpy(block.data(), &params, sizeof(Params));
    launch_on_current_stream(kernel, device, {static_cast<unsigned>(blocks), 1, 1},
        {kThreads, 1, 1}, block, [count = params.count] {
          return "layout copies of " + std::to_string(count) + " tensors";
        });
  }
}

}  // namespace

std::string layout_copies_kernel_name(int element_size) {
  return "nvfuse_layout_copies_" + std::to_string(element_size);
}

std::string layout_copies_source(int element_size) {
  return "#define ROW_WALK_BYTES " + std::to_string(kRowWalkBytes) + "\n#define ELEMENT " +
      std::string(element_type_of(element_size)) + "\n#define KERNEL_NAME " +
      layout_copies_kernel_name(element_size) + "\n" + kKernelSource;
}

namespace {

// The axis along which `sizes` exceed `source`'s (-1: none), checking that
// they do along at most one and shrink along none.
int64_t padded_axis_of(const at::Tensor& source, const std::vector<int64_t>& sizes, size_t k) {
  NVFUSE_INPUT_CHECK(static_cast<int64_t>(sizes.size()) == source.dim(),
      "copy_into_padded: tensor ", k, " has ", source.dim(), " axes but ", sizes.size(),
      " sizes were given for it");
  int64_t axis = -1;
  for (int64_t d = 0; d < source.dim(); ++d) {
    NVFUSE_INPUT_CHECK(sizes[d] >= source.size(d), "copy_into_padded: the sizes ",
        at::IntArrayRef(sizes), " of tensor ", k, " are smaller than its own ", source.sizes());
    if (sizes[d] > source.size(d)) {
      NVFUSE_INPUT_CHECK(axis < 0, "copy_into_padded: the sizes ", at::IntArrayRef(sizes),
          " of tensor ", k, " pad more than one axis of its ", source.sizes());
      axis = d;
    }
  }
  return axis;
}

// copy_into_layouts and copy_into_padded: `sizes` empty, or each copy's
// sizes (padded along at most one axis).
std::vector<at::Tensor> grouped_copies(const char* caller, const std::vector<at::Tensor>& sources,
    const std::vector<std::vector<int64_t>>& sizes,
    const std::vector<std::vector<int64_t>>& strides) {
  NVFUSE_INPUT_CHECK(sources.size() == strides.size(), caller, ": ", sources.size(),
      " tensors but ", strides.size(), " stride lists");
  NVFUSE_INPUT_CHECK(sizes.empty() || sizes.size() == sources.size(), caller, ": ", sources.size(),
      " tensors but ", sizes.size(), " size lists");
  std::vector<at::Tensor> copies;
  copies.reserve(sources.size());
  std::optional<c10::Device> cuda_device;
  std::vector<Part> parts_by_size[9];
  for (size_t k = 0; k < sources.size(); ++k) {
    const at::Tensor& source = sources[k];
    const int64_t padded_axis = sizes.empty() ? -1 : padded_axis_of(source, sizes[k], k);
    const at::IntArrayRef copy_sizes = sizes.empty() ? source.sizes() : at::IntArrayRef(sizes[k]);
    NVFUSE_INPUT_CHECK(static_cast<int64_t>(strides[k].size()) == source.dim(), caller, ": tensor ",
        k, " has ", source.dim(), " axes but ", strides[k].size(), " strides were given for it");
    NVFUSE_INPUT_CHECK(is_dense(copy_sizes, strides[k]), caller, ": the strides ",
        at::IntArrayRef(strides[k]), " of tensor ", k, " do not lay out its sizes ", copy_sizes,
        " densely");
    copies.push_back(at::empty_strided(copy_sizes, strides[k], source.options()));
    at::Tensor& copy = copies.back();
    if (copy.numel() == 0) {
      continue;
    }
    const bool groupable = source.is_cuda() && source.numel() > 0 && source.element_size() <= 8 &&
        (source.element_size() & (source.element_size() - 1)) == 0;
    std::optional<Part> part = groupable ? part_of(source, copy, padded_axis) : std::nullopt;
    if (!part) {
      if (padded_axis >= 0) {
        copy.zero_();
        copy.narrow(padded_axis, 0, source.size(padded_axis)).copy_(source);
      } else {
        copy.copy_(source);
      }
      continue;
    }
    NVFUSE_INPUT_CHECK(!cuda_device || *cuda_device == source.device(), caller, ": tensor ", k,
        " is on ", source.device(), ", the tensors before it on ", *cuda_device,
        "; expected one CUDA device");
    cuda_device = source.device();
    parts_by_size[source.element_size()].push_back(*part);
  }
  for (int element_size : {1, 2, 4, 8}) {
    if (!parts_by_size[element_size].empty()) {
      launch_parts(parts_by_size[element_size], element_size, *cuda_device);
    }
  }
  return copies;
}

}  // namespace

std::vector<at::Tensor> copy_into_layouts(
    const std::vector<at::Tensor>& sources, const std::vector<std::vector<int64_t>>& strides) {
  return grouped_copies("copy_into_layouts", sources, {}, strides);
}

std::vector<at::Tensor> copy_into_padded(const std::vector<at::Tensor>& sources,
    const std::vector<std::vector<int64_t>>& sizes,
    const std::vector<std::vector<int64_t>>& strides) {
  return grouped_copies("copy_into_padded", sources, sizes, strides);
}

}  // namespace nvfuse
