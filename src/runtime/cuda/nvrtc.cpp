#include "runtime/cuda/nvrtc.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "ir/errors.h"
#include "runtime/cuda/dynamic_library.h"

namespace nvfuse {

namespace {

// NVRTC's C API, declared here so that nvfuse builds without CUDA headers.
using nvrtcResult = int;
using nvrtcProgram = struct NvrtcProgramOpaque*;
constexpr nvrtcResult kNvrtcSuccess = 0;

std::vector<std::string> nvrtc_candidates() {
  std::vector<std::string> candidates;
  if (const char* path = std::getenv("NVFUSE_NVRTC_LIBRARY")) {
    candidates.push_back(path);
  }
  for (const std::string& dir : nvrtc_search_directories()) {
    candidates.push_back(dir + "/libnvrtc.so.13");
    candidates.push_back(dir + "/libnvrtc.so.12");
  }
  candidates.insert(candidates.end(),
      {"libnvrtc.so.13", "/usr/local/cuda/lib64/libnvrtc.so.13", "libnvrtc.so.12",
          "/usr/local/cuda/lib64/libnvrtc.so.12", "libnvrtc.so"});
  return candidates;
}

struct NvrtcApi {
  DynamicLibrary library{"NVRTC (libnvrtc.so)", nvrtc_candidates()};

  template <typename F>
  F load(const char* name) const {
    return reinterpret_cast<F>(library.symbol(name));
  }

  const char* (*GetErrorString)(nvrtcResult) = load<const char* (*)(nvrtcResult)>(
      "nvrtcGetErrorString");
  nvrtcResult (*Version)(int*, int*) = load<nvrtcResult (*)(int*, int*)>("nvrtcVersion");
  nvrtcResult (*GetNumSupportedArchs)(int*) = load<nvrtcResult (*)(int*)>(
      "nvrtcGetNumSupportedArchs");
  nvrtcResult (*GetSupportedArchs)(int*) = load<nvrtcResult (*)(int*)>("nvrtcGetSupportedArchs");
  nvrtcResult (*CreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*,
      const char* const*) = load<nvrtcResult (*)(nvrtcProgram*, const char*, const char*, int,
      const char* const*, const char* const*)>("nvrtcCreateProgram");
  nvrtcResult (*DestroyProgram)(nvrtcProgram*) = load<nvrtcResult (*)(nvrtcProgram*)>(
      "nvrtcDestroyProgram");
  nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char* const*) =
      load<nvrtcResult (*)(nvrtcProgram, int, const char* const*)>("nvrtcCompileProgram");
  nvrtcResult (*GetProgramLogSize)(nvrtcProgram,
      size_t*) = load<nvrtcResult (*)(nvrtcProgram, size_t*)>("nvrtcGetProgramLogSize");
  nvrtcResult (*GetProgramLog)(nvrtcProgram, char*) = load<nvrtcResult (*)(nvrtcProgram, char*)>(
      "nvrtcGetProgramLog");
  nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t*) = load<nvrtcResult (*)(nvrtcProgram, size_t*)>(
      "nvrtcGetCUBINSize");
  nvrtcResult (*GetCUBIN)(nvrtcProgram, char*) = load<nvrtcResult (*)(nvrtcProgram, char*)>(
      "nvrtcGetCUBIN");
  nvrtcResult (*GetPTXSize)(nvrtcProgram, size_t*) = load<nvrtcResult (*)(nvrtcProgram, size_t*)>(
      "nvrtcGetPTXSize");
  nvrtcResult (*GetPTX)(nvrtcProgram, char*) = load<nvrtcResult (*)(nvrtcProgram, char*)>(
      "nvrtcGetPTX");

  void check(nvrtcResult result, const char* call) const {
    NVFUSE_ASSERT(result == kNvrtcSuccess, call, " failed: ", GetErrorString(result));
  }
};

const NvrtcApi& nvrtc() {
  static const NvrtcApi api;
  return api;
}

// The newest architecture NVRTC supports that the device can run: the
// device's own, or an older one as PTX.
int supported_arch_for(int arch) {
  const NvrtcApi& api = nvrtc();
  int count = 0;
  api.check(api.GetNumSupportedArchs(&count), "nvrtcGetNumSupportedArchs");
  std::vector<int> archs(count);
  api.check(api.GetSupportedArchs(archs.data()), "nvrtcGetSupportedArchs");
  int best = 0;
  for (int a : archs) {
    if (a <= arch) {
      best = std::max(best, a);
    }
  }
  NVFUSE_CHECK_AS(ErrorKind::kUnsupported, best > 0,
      "NVRTC supports no architecture at "
      "or below sm_",
      arch);
  return best;
}

}  // namespace

NvrtcVersion nvrtc_version() {
  NvrtcVersion version;
  nvrtc().check(nvrtc().Version(&version.major, &version.minor), "nvrtcVersion");
  return version;
}

std::vector<std::string> nvrtc_options(int arch, const std::vector<std::string>& extra_options) {
  const int target = supported_arch_for(arch);
  // A real architecture gives a cubin; a virtual one (when NVRTC is older
  // than the GPU) gives PTX for the driver to compile.
  std::vector<std::string> options = {
      (target == arch ? "--gpu-architecture=sm_" : "--gpu-architecture=compute_") +
          std::to_string(target),
      "--std=c++17",
      "-default-device",
      "-DNDEBUG",
  };
  // Generated kernels use no texture, CUDA runtime or device-launch
  // declarations, which NVRTC otherwise parses for every program: without
  // them (NVRTC 12.4 on) an empty kernel compiles in about 28 instead of
  // 39 ms on a 2-core CPU, a small pointwise or softmax kernel 10-20 ms
  // faster, and the cubins are byte-identical.
  const NvrtcVersion version = nvrtc_version();
  if (version.major > 12 || (version.major == 12 && version.minor >= 4)) {
    options.push_back("-minimal");
  }
  options.insert(options.end(), extra_options.begin(), extra_options.end());
  return options;
}

CompiledBinary compile_cuda(const std::string& source, const std::string& name, int arch,
    const std::vector<std::string>& extra_options) {
  const NvrtcApi& api = nvrtc();
  const std::vector<std::string> options = nvrtc_options(arch, extra_options);
  std::vector<const char*> option_ptrs;
  for (const std::string& option : options) {
    option_ptrs.push_back(option.c_str());
  }
  const auto start = std::chrono::steady_clock::now();
  nvrtcProgram program = nullptr;
  api.check(
      api.CreateProgram(&program, source.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr),
      "nvrtcCreateProgram");
  const nvrtcResult compiled =
      api.CompileProgram(program, static_cast<int>(option_ptrs.size()), option_ptrs.data());

  CompiledBinary binary;
  size_t log_size = 0;
  api.check(api.GetProgramLogSize(program, &log_size), "nvrtcGetProgramLogSize");
  binary.log.resize(log_size);
  api.check(api.GetProgramLog(program, binary.log.data()), "nvrtcGetProgramLog");
  while (!binary.log.empty() && binary.log.back() == '\0') {
    binary.log.pop_back();
  }
  if (compiled != kNvrtcSuccess) {
    api.DestroyProgram(&program);
    NVFUSE_ASSERT(false, "NVRTC failed to compile the generated kernel ", name, ": ",
        api.GetErrorString(compiled), "\n", binary.log, "\nSource:\n", source);
  }
  binary.is_ptx = options.front().find("compute_") != std::string::npos;
  size_t size = 0;
  if (binary.is_ptx) {
    api.check(api.GetPTXSize(program, &size), "nvrtcGetPTXSize");
    binary.image.resize(size);
    api.check(api.GetPTX(program, binary.image.data()), "nvrtcGetPTX");
  } else {
    api.check(api.GetCUBINSize(program, &size), "nvrtcGetCUBINSize");
    binary.image.resize(size);
    api.check(api.GetCUBIN(program, binary.image.data()), "nvrtcGetCUBIN");
  }
  api.DestroyProgram(&program);
  binary.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return binary;
}

}  // namespace nvfuse
