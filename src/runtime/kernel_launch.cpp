#include "runtime/kernel_launch.h"

#include <ATen/ATen.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <optional>

#include "ir/dump.h"
#include "runtime/host_timing.h"
#include "runtime/cuda/nvtx_range.h"
#include "schedule/fast_divider.h"

namespace nvfuse {

namespace {

template <typename T>
void store(char* dst, T value) {
  std::memcpy(dst, &value, sizeof(value));
}

// `value` as the kernel's `dtype` parameter expects its bytes.
void write_value(char* dst, const ScalarValue& value, DataType dtype) {
  switch (dtype) {
    case DataType::Double:
      return store(dst, value.as_double());
    case DataType::Float:
      return store(dst, static_cast<float>(value.as_double()));
    case DataType::Half:
      return store(dst, c10::Half(static_cast<float>(value.as_double())).x);
    case DataType::BFloat16:
      return store(dst, c10::BFloat16(static_cast<float>(value.as_double())).x);
    case DataType::Int:
    case DataType::Index:
      return store(dst, value.as_int());
    case DataType::Int32:
      return store(dst, static_cast<int32_t>(value.as_int()));
    case DataType::Bool:
      return store(dst, static_cast<uint8_t>(value.as_bool() ? 1 : 0));
    default:
      NVFUSE_ASSERT(false, "cannot pass a ", dtype, " value to a kernel");
  }
}

void write_index(char* dst, int64_t value, size_t size) {
  if (size == 4) {
    store(dst, static_cast<int32_t>(value));
  } else {
    store(dst, value);
  }
}

}  // namespace

std::optional<std::vector<std::vector<int64_t>>> output_sizes_of(
    const std::vector<const TensorView*>& outputs, BoundInputs& bound) {
  std::vector<std::vector<int64_t>> sizes;
  for (const TensorView* tv : outputs) {
    std::vector<int64_t> shape;
    for (const IterDomain* id : tv->logical()) {
      auto size = bound.extents.evaluate(id->logical_extent());
      if (!size.has_value()) {
        return std::nullopt;
      }
      shape.push_back(size->as_int());
    }
    sizes.push_back(std::move(shape));
  }
  return sizes;
}

TensorArg tensor_arg_of(const at::Tensor& t) {
  return {from_aten(t.scalar_type()), t.sizes().vec(), t.strides().vec(),
      reinterpret_cast<uint64_t>(t.data_ptr())};
}

DeviceInfo device_info_of(c10::Device device) {
  if (!device.is_cuda()) {
    return DeviceInfo{};  // code for a CPU stand-in: default to an H100
  }
  const auto& props = cuda_driver::properties(device.index());
  return DeviceInfo{props.sm_count, props.arch, props.l2_bytes};
}

void check_launch_tuning(
    int block_size, int max_unroll, int per_thread, const char* per_thread_name) {
  NVFUSE_CHECK(block_size > 0 && block_size <= 1024 && block_size % 32 == 0,
      "block_size must be a multiple of 32 up to 1024, got ", block_size);
  NVFUSE_CHECK(max_unroll >= 1 && per_thread >= 1, "max_unroll and ", per_thread_name,
      " must be at least 1, got ", max_unroll, " and ", per_thread);
}

bool programmatic_launches(c10::Device device) {
  static const bool allowed = [] {
    const char* env = std::getenv("NVFUSE_PROGRAMMATIC_LAUNCH");
    return env == nullptr || std::string(env) != "0";
  }();
  return allowed && device_info_of(device).arch >= 90;
}

bool poison_outputs() {
  static const bool poison = [] {
    const char* env = std::getenv("NVFUSE_POISON_OUTPUTS");
    return env != nullptr && std::string(env) == "1";
  }();
  return poison;
}

void poison(at::Tensor& t) {
  if (at::isFloatingType(t.scalar_type())) {
    t.fill_(std::numeric_limits<double>::quiet_NaN());
  } else if (t.scalar_type() != at::kBool) {
    t.fill_(-123);
  }
}

std::vector<uint64_t> pack_args(const KernelArgLayout& layout, const LaunchValues& values) {
  std::vector<uint64_t> storage((layout.size + 7) / 8 + 1, 0);
  char* base = reinterpret_cast<char*>(storage.data());
  for (const KernelArg& arg : layout.args) {
    char* dst = base + arg.offset;
    switch (arg.field) {
      case ArgField::kTensorPointer:
        store(dst, values.pointers[arg.index]);
        break;
      case ArgField::kValue:
        write_value(dst, values.values[arg.index], arg.dtype);
        break;
      case ArgField::kNumel:
        write_index(dst, values.numel, arg.element_size);
        break;
      case ArgField::kWidth:
        write_index(dst, values.width, arg.element_size);
        break;
      case ArgField::kPartialRows:
        write_index(dst, values.partial_rows, arg.element_size);
        break;
      case ArgField::kGraphRng:
        store(dst, values.graph_rng[arg.index]);
        break;
      case ArgField::kLaneShift:
        write_index(dst, values.lane_shift, arg.element_size);
        break;
      case ArgField::kExtents:
        for (int k = 0; k < arg.count; ++k) {
          write_index(dst + k * arg.element_size, values.extents[k], arg.element_size);
        }
        break;
      case ArgField::kStrides:
        for (int k = 0; k < arg.count; ++k) {
          write_index(dst + k * arg.element_size, values.strides[arg.index][k], arg.element_size);
        }
        break;
      case ArgField::kColStride:
        write_index(dst, values.col_strides[arg.index], arg.element_size);
        break;
      case ArgField::kDividers:
        for (int k = 0; k < arg.count; ++k) {
          const FastDivider d = fast_divider_of(values.divisors[k]);
          std::memcpy(dst + 8 * k, &d.magic, 4);
          std::memcpy(dst + 8 * k + 4, &d.shift, 4);
        }
        break;
      case ArgField::kWorkspace:
        store(dst, values.workspace);
        break;
      case ArgField::kSemaphores:
        store(dst, values.semaphores);
        break;
    }
  }
  return storage;
}

void launch_on_current_stream(const LoadedKernel& kernel, c10::Device device,
    cuda_driver::Dim3 grid, cuda_driver::Dim3 block, std::vector<uint64_t>& args,
    const std::function<std::string()>& describe, unsigned shared_bytes, unsigned cluster_x,
    bool programmatic) {
  const NvtxRange range(kernel.name);
  cuda_driver::make_context_current(device.index());
  const c10::Stream stream =
      c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->getStream(device);
  if (dump_enabled(DumpOption::launch)) {
    dump_stream() << "nvfuse launch: grid=" << grid.x << "x" << grid.y << " block=" << block.x
                  << " shared=" << shared_bytes
                  << (cluster_x > 1 ? " cluster=" + std::to_string(cluster_x) : std::string())
                  << (programmatic ? " programmatic" : "") << " " << describe() << std::endl;
  }
  void* params[] = {args.data()};
  const HostStepTimer step("08b the driver's launch call");
  cuda_driver::launch(kernel.function, grid, block, shared_bytes, stream.native_handle(), params,
      cluster_x, programmatic);
}

}  // namespace nvfuse
