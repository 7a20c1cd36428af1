#include "runtime/layout_copies.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>

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
// the source's stride along each.
struct Part {
  uint64_t source = 0;
  uint64_t destination = 0;
  int64_t first_block = 0;
  uint32_t numel = 0;
  uint32_t unused = 0;
  uint32_t sizes[kMaxRank] = {};
  uint32_t source_strides[kMaxRank] = {};
};
static_assert(sizeof(Part) == 72, "the kernel source's Part");

struct Params {
  int32_t count = 0;
  int32_t unused = 0;
  Part parts[kMaxParts];
};

constexpr const char* kKernelSource = R"(
#define RANK 5
struct Part {
  unsigned long long source, destination;
  long long first_block;
  unsigned int numel, unused;
  unsigned int sizes[RANK], source_strides[RANK];
};
struct Params { int count, unused; Part parts[48]; };
struct alignas(4 * sizeof(ELEMENT)) Four { ELEMENT v[4]; };

extern "C" __global__ void __launch_bounds__(256) KERNEL_NAME(const __grid_constant__ Params p) {
  // The part whose blocks hold this one: the last that starts at or before it.
  int low = 0, high = p.count - 1;
  while (low < high) {
    const int middle = (low + high + 1) / 2;
    if (p.parts[middle].first_block <= (long long)blockIdx.x) low = middle; else high = middle - 1;
  }
  const Part& part = p.parts[low];
  const unsigned int first =
      ((unsigned int)(blockIdx.x - part.first_block) * 256u + threadIdx.x) * 4u;
  if (first >= part.numel) return;
  // The first element's coordinates, then the next ones by carrying.
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
  Four values;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    if (k < count) values.v[k] = source[offset];
#pragma unroll
    for (int d = RANK - 1; d >= 0; --d) {
      offset += part.source_strides[d];
      if (++coordinate[d] < part.sizes[d] || d == 0) break;
      offset -= part.sizes[d] * part.source_strides[d];
      coordinate[d] = 0;
    }
  }
  if (count == 4) {
    *reinterpret_cast<Four*>(destination) = values;
  } else {
    for (unsigned int k = 0; k < count; ++k) destination[k] = values.v[k];
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

// `source`'s copy into `destination` as a Part (first_block unset), or
// nullopt when it needs more axes or wider indices than the kernel has.
std::optional<Part> part_of(const at::Tensor& source, const at::Tensor& destination) {
  std::vector<int64_t> axes;
  for (int64_t d = 0; d < source.dim(); ++d) {
    if (source.size(d) > 1) {
      axes.push_back(d);
    }
  }
  std::stable_sort(axes.begin(), axes.end(),
      [&](int64_t a, int64_t b) { return destination.stride(a) > destination.stride(b); });
  // Merges an axis into the one outside it where the source steps over
  // both as one: the channels-last weight's kernel rows and columns.
  std::vector<int64_t> sizes, strides;
  for (int64_t axis : axes) {
    const int64_t size = source.size(axis), stride = source.stride(axis);
    if (!sizes.empty() && strides.back() == stride * size) {
      sizes.back() *= size;
      strides.back() = stride;
    } else {
      sizes.push_back(size);
      strides.push_back(stride);
    }
  }
  int64_t last_offset = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    last_offset += (sizes[k] - 1) * strides[k];
  }
  constexpr int64_t kLimit = std::numeric_limits<int32_t>::max();
  if (static_cast<int>(sizes.size()) > kMaxRank || source.numel() > kLimit - kPerBlock ||
      last_offset > kLimit) {
    return std::nullopt;
  }
  Part part;
  part.source = reinterpret_cast<uint64_t>(source.const_data_ptr());
  part.destination = reinterpret_cast<uint64_t>(destination.mutable_data_ptr());
  part.numel = static_cast<uint32_t>(source.numel());
  const size_t pad = kMaxRank - sizes.size();
  for (int d = 0; d < kMaxRank; ++d) {
    const bool padded = static_cast<size_t>(d) < pad;
    part.sizes[d] = padded ? 1 : static_cast<uint32_t>(sizes[d - pad]);
    part.source_strides[d] = padded ? 0 : static_cast<uint32_t>(strides[d - pad]);
  }
  return part;
}

void launch_parts(std::vector<Part>& parts, int element_size, c10::Device device) {
  const LoadedKernel& kernel = load_kernel(
      layout_copies_source(element_size), layout_copies_kernel_name(element_size), device.index());
  for (size_t start = 0; start < parts.size(); start += kMaxParts) {
    const size_t end = std::min(parts.size(), start + kMaxParts);
    Params params;
    params.count = static_cast<int32_t>(end - start);
    int64_t blocks = 0;
    for (size_t k = start; k < end; ++k) {
      parts[k].first_block = blocks;
      blocks += (parts[k].numel + kPerBlock - 1) / kPerBlock;
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
  return "#define ELEMENT " + std::string(element_type_of(element_size)) +
      "\n#define KERNEL_NAME " + layout_copies_kernel_name(element_size) + "\n" + kKernelSource;
}

std::vector<at::Tensor> copy_into_layouts(
    const std::vector<at::Tensor>& sources, const std::vector<std::vector<int64_t>>& strides) {
  NVFUSE_INPUT_CHECK(sources.size() == strides.size(), "copy_into_layouts: ", sources.size(),
      " tensors but ", strides.size(), " stride lists");
  std::vector<at::Tensor> copies;
  copies.reserve(sources.size());
  std::optional<c10::Device> cuda_device;
  std::vector<Part> parts_by_size[9];
  for (size_t k = 0; k < sources.size(); ++k) {
    const at::Tensor& source = sources[k];
    NVFUSE_INPUT_CHECK(static_cast<int64_t>(strides[k].size()) == source.dim(),
        "copy_into_layouts: tensor ", k, " has ", source.dim(), " axes but ", strides[k].size(),
        " strides were given for it");
    NVFUSE_INPUT_CHECK(is_dense(source.sizes(), strides[k]), "copy_into_layouts: the strides ",
        at::IntArrayRef(strides[k]), " of tensor ", k, " do not lay out its sizes ", source.sizes(),
        " densely");
    copies.push_back(at::empty_strided(source.sizes(), strides[k], source.options()));
    at::Tensor& copy = copies.back();
    if (source.numel() == 0) {
      continue;
    }
    const bool groupable = source.is_cuda() && source.element_size() <= 8 &&
        (source.element_size() & (source.element_size() - 1)) == 0;
    std::optional<Part> part = groupable ? part_of(source, copy) : std::nullopt;
    if (!part) {
      copy.copy_(source);
      continue;
    }
    NVFUSE_INPUT_CHECK(!cuda_device || *cuda_device == source.device(),
        "copy_into_layouts: tensor ", k, " is on ", source.device(), ", the tensors before it on ",
        *cuda_device, "; expected one CUDA device");
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

}  // namespace nvfuse
