#include "runtime/cuda/cuda_driver.h"

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>

#include "ir/errors.h"
#include "runtime/cuda/dynamic_library.h"

namespace nvfuse::cuda_driver {

namespace {

// The driver's C API, declared here so that nvfuse builds without CUDA
// headers. Values from cuda.h.
using CUresult = int;
using CUdevice = int;
using CUcontext = struct CUctxOpaque*;
using CUmodule = struct CUmodOpaque*;
using CUfunction = struct CUfuncOpaque*;
using CUstream = struct CUstreamOpaque*;
constexpr CUresult kSuccess = 0;
constexpr int kAttrSmCount = 16;
constexpr int kAttrL2CacheSize = 38;
constexpr int kAttrMajor = 75;
constexpr int kAttrMinor = 76;
constexpr int kFuncAttrLocalBytes = 3;
constexpr int kFuncAttrRegisters = 4;
constexpr int kFuncAttrMaxDynamicSharedBytes = 8;
constexpr int kFuncAttrNonPortableClusterSizeAllowed = 14;
constexpr int kLaunchAttrClusterDimension = 4;
constexpr int kLaunchAttrProgrammaticStreamSerialization = 6;

// cuLaunchKernelEx's configuration (cuda.h's CUlaunchAttribute and
// CUlaunchConfig, with only the cluster dimension and the programmatic
// stream serialization flag of the value union).
struct LaunchAttribute {
  int id;
  char pad[4];
  union {
    char bytes[64];
    struct {
      unsigned x, y, z;
    } cluster;
    int programmatic;
  } value;
};
struct LaunchConfig {
  unsigned grid_x, grid_y, grid_z;
  unsigned block_x, block_y, block_z;
  unsigned shared_bytes;
  CUstream stream;
  LaunchAttribute* attributes;
  unsigned attribute_count;
};

struct DriverApi {
  DynamicLibrary library{"the CUDA driver (libcuda.so.1)", {"libcuda.so.1", "libcuda.so"}};

  template <typename F>
  F load(const char* name) const {
    return reinterpret_cast<F>(library.symbol(name));
  }

  CUresult (*Init)(unsigned) = load<CUresult (*)(unsigned)>("cuInit");
  CUresult (*GetErrorName)(CUresult, const char**) = load<CUresult (*)(CUresult, const char**)>(
      "cuGetErrorName");
  CUresult (*GetErrorString)(CUresult, const char**) = load<CUresult (*)(CUresult, const char**)>(
      "cuGetErrorString");
  CUresult (*DeviceGet)(CUdevice*, int) = load<CUresult (*)(CUdevice*, int)>("cuDeviceGet");
  CUresult (*DeviceGetAttribute)(int*, int, CUdevice) = load<CUresult (*)(int*, int, CUdevice)>(
      "cuDeviceGetAttribute");
  CUresult (*PrimaryCtxRetain)(CUcontext*, CUdevice) = load<CUresult (*)(CUcontext*, CUdevice)>(
      "cuDevicePrimaryCtxRetain");
  CUresult (*CtxGetCurrent)(CUcontext*) = load<CUresult (*)(CUcontext*)>("cuCtxGetCurrent");
  CUresult (*CtxSetCurrent)(CUcontext) = load<CUresult (*)(CUcontext)>("cuCtxSetCurrent");
  CUresult (*ModuleLoadData)(CUmodule*, const void*) = load<CUresult (*)(CUmodule*, const void*)>(
      "cuModuleLoadData");
  CUresult (*ModuleGetFunction)(CUfunction*, CUmodule,
      const char*) = load<CUresult (*)(CUfunction*, CUmodule, const char*)>("cuModuleGetFunction");
  CUresult (*FuncSetAttribute)(CUfunction, int, int) = load<CUresult (*)(CUfunction, int, int)>(
      "cuFuncSetAttribute");
  CUresult (*OccupancyMaxActiveBlocksPerMultiprocessor)(int*, CUfunction, int, size_t) =
      load<CUresult (*)(int*, CUfunction, int, size_t)>(
          "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  CUresult (*OccupancyMaxActiveClusters)(int*, CUfunction, const LaunchConfig*) =
      load<CUresult (*)(int*, CUfunction, const LaunchConfig*)>("cuOccupancyMaxActiveClusters");
  CUresult (*StreamIsCapturing)(CUstream, int*) = load<CUresult (*)(CUstream, int*)>(
      "cuStreamIsCapturing");
  CUresult (*FuncGetAttribute)(int*, int, CUfunction) = load<CUresult (*)(int*, int, CUfunction)>(
      "cuFuncGetAttribute");
  CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
      unsigned, CUstream, void**,
      void**) = load<CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
      unsigned, unsigned, CUstream, void**, void**)>("cuLaunchKernel");
  CUresult (*LaunchKernelEx)(const LaunchConfig*, CUfunction, void**, void**) =
      load<CUresult (*)(const LaunchConfig*, CUfunction, void**, void**)>("cuLaunchKernelEx");

  DriverApi() { check(Init(0), "cuInit"); }

  void check(CUresult result, const char* call) const {
    if (result == kSuccess) {
      return;
    }
    const char* name = "?";
    const char* text = "?";
    GetErrorName(result, &name);
    GetErrorString(result, &text);
    NVFUSE_ASSERT(false, call, " failed: ", name, " (", text, ")");
  }
};

const DriverApi& driver() {
  static const DriverApi api;
  return api;
}

std::mutex contexts_mutex;
std::map<int, CUcontext>& primary_contexts() {
  static std::map<int, CUcontext> contexts;
  return contexts;
}

const DeviceProperties& lookup_properties(int device) {
  static std::mutex mutex;
  static std::map<int, DeviceProperties> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(device);
  if (it != cache.end()) {
    return it->second;
  }
  const DriverApi& api = driver();
  CUdevice handle = 0;
  api.check(api.DeviceGet(&handle, device), "cuDeviceGet");
  auto attribute = [&](int which) {
    int value = 0;
    api.check(api.DeviceGetAttribute(&value, which, handle), "cuDeviceGetAttribute");
    return value;
  };
  DeviceProperties props;
  props.sm_count = attribute(kAttrSmCount);
  props.arch = attribute(kAttrMajor) * 10 + attribute(kAttrMinor);
  props.l2_bytes = attribute(kAttrL2CacheSize);
  return cache.emplace(device, props).first->second;
}

}  // namespace

const DeviceProperties& properties(int device) {
  // Read on every launch: the thread's last answer first (the map's
  // entries never move), the locked map otherwise.
  thread_local int last_device = -1;
  thread_local const DeviceProperties* last = nullptr;
  if (device == last_device) {
    return *last;
  }
  const DeviceProperties& found = lookup_properties(device);
  last_device = device;
  last = &found;
  return found;
}

void make_context_current(int device) {
  const DriverApi& api = driver();
  // Every launch: the thread's last device's context first, the locked map
  // of retained primary contexts otherwise.
  thread_local int last_device = -1;
  thread_local CUcontext last_context = nullptr;
  CUcontext context = device == last_device ? last_context : nullptr;
  if (context == nullptr) {
    std::lock_guard<std::mutex> lock(contexts_mutex);
    auto& contexts = primary_contexts();
    auto it = contexts.find(device);
    if (it == contexts.end()) {
      CUdevice handle = 0;
      api.check(api.DeviceGet(&handle, device), "cuDeviceGet");
      api.check(api.PrimaryCtxRetain(&context, handle), "cuDevicePrimaryCtxRetain");
      contexts.emplace(device, context);  // retained for the process's life
    } else {
      context = it->second;
    }
    last_device = device;
    last_context = context;
  }
  CUcontext current = nullptr;
  api.check(api.CtxGetCurrent(&current), "cuCtxGetCurrent");
  if (current != context) {
    api.check(api.CtxSetCurrent(context), "cuCtxSetCurrent");
  }
}

void* load_module(const std::string& image) {
  const DriverApi& api = driver();
  CUmodule module = nullptr;
  api.check(api.ModuleLoadData(&module, image.data()), "cuModuleLoadData");
  return module;
}

void* get_function(void* module, const std::string& name) {
  const DriverApi& api = driver();
  CUfunction function = nullptr;
  api.check(api.ModuleGetFunction(&function, static_cast<CUmodule>(module), name.c_str()),
      "cuModuleGetFunction");
  return function;
}

FunctionResources resources_of(void* function) {
  const DriverApi& api = driver();
  FunctionResources resources;
  auto* f = static_cast<CUfunction>(function);
  api.check(
      api.FuncGetAttribute(&resources.registers, kFuncAttrRegisters, f), "cuFuncGetAttribute");
  api.check(
      api.FuncGetAttribute(&resources.local_bytes, kFuncAttrLocalBytes, f), "cuFuncGetAttribute");
  return resources;
}

void allow_dynamic_shared_bytes(void* function, int bytes) {
  const DriverApi& api = driver();
  api.check(api.FuncSetAttribute(
                static_cast<CUfunction>(function), kFuncAttrMaxDynamicSharedBytes, bytes),
      "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
}

void allow_non_portable_clusters(void* function) {
  const DriverApi& api = driver();
  api.check(api.FuncSetAttribute(
                static_cast<CUfunction>(function), kFuncAttrNonPortableClusterSizeAllowed, 1),
      "cuFuncSetAttribute(NON_PORTABLE_CLUSTER_SIZE_ALLOWED)");
}

int max_active_blocks_per_sm(void* function, int block_size, size_t shared_bytes) {
  const DriverApi& api = driver();
  int blocks = 0;
  api.check(api.OccupancyMaxActiveBlocksPerMultiprocessor(
                &blocks, static_cast<CUfunction>(function), block_size, shared_bytes),
      "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  return blocks;
}

int max_active_clusters(void* function, unsigned cluster_x, int block_size, unsigned shared_bytes) {
  const DriverApi& api = driver();
  LaunchAttribute cluster{};
  cluster.id = kLaunchAttrClusterDimension;
  cluster.value.cluster = {cluster_x, 1, 1};
  const LaunchConfig config{
      cluster_x, 1, 1, static_cast<unsigned>(block_size), 1, 1, shared_bytes, nullptr, &cluster, 1};
  int clusters = 0;
  api.check(api.OccupancyMaxActiveClusters(&clusters, static_cast<CUfunction>(function), &config),
      "cuOccupancyMaxActiveClusters");
  return clusters;
}

bool is_capturing(void* stream) {
  const DriverApi& api = driver();
  int status = 0;  // CU_STREAM_CAPTURE_STATUS_NONE
  api.check(api.StreamIsCapturing(static_cast<CUstream>(stream), &status), "cuStreamIsCapturing");
  return status != 0;
}

void launch(void* function, Dim3 grid, Dim3 block, unsigned shared_bytes, void* stream,
    void** params, unsigned cluster_x, bool programmatic) {
  const DriverApi& api = driver();
  // A driver (or a capture) that refuses programmatic launches does so
  // before anything runs: from then on this process launches such kernels
  // plainly, after the kernel before them, which is always correct (they
  // start with griddepcontrol.wait, a no-op without the dependency).
  static std::atomic<bool> programmatic_refused{false};
  programmatic = programmatic && !programmatic_refused.load(std::memory_order_relaxed);
  if (cluster_x > 1 || programmatic) {
    LaunchAttribute attributes[2]{};
    unsigned count = 0;
    if (cluster_x > 1) {
      attributes[count].id = kLaunchAttrClusterDimension;
      attributes[count++].value.cluster = {cluster_x, 1, 1};
    }
    if (programmatic) {
      attributes[count].id = kLaunchAttrProgrammaticStreamSerialization;
      attributes[count++].value.programmatic = 1;
    }
    const LaunchConfig config{grid.x, grid.y, grid.z, block.x, block.y, block.z, shared_bytes,
        static_cast<CUstream>(stream), attributes, count};
    const CUresult result =
        api.LaunchKernelEx(&config, static_cast<CUfunction>(function), params, nullptr);
    if (result != kSuccess && programmatic) {
      // Throws where the launch fails for another reason as well.
      launch(function, grid, block, shared_bytes, stream, params, cluster_x, false);
      programmatic_refused.store(true, std::memory_order_relaxed);
      return;
    }
    api.check(result, "cuLaunchKernelEx");
    return;
  }
  api.check(api.LaunchKernel(static_cast<CUfunction>(function), grid.x, grid.y, grid.z, block.x,
                block.y, block.z, shared_bytes, static_cast<CUstream>(stream), params, nullptr),
      "cuLaunchKernel");
}

}  // namespace nvfuse::cuda_driver
