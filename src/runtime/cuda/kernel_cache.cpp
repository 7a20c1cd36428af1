#include "runtime/cuda/kernel_cache.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <future>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "ir/dump.h"
#include "ir/errors.h"
#include "runtime/cuda/nvrtc.h"
#include "runtime/cuda/nvtx_range.h"

namespace nvfuse {

namespace {

uint64_t fnv1a(const std::string& text, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : text) {
    h = (h ^ c) * 0x100000001b3ULL;
  }
  return h;
}

// `source` without its // comments (string and character literals kept
// whole). Generated kernels comment each statement with the expr it
// computes, constants included; kernels that differ only there (a random
// op's bounds, passed by value) are one binary.
std::string without_line_comments(const std::string& source) {
  std::string code;
  code.reserve(source.size());
  char quote = 0;
  for (size_t i = 0; i < source.size(); ++i) {
    const char c = source[i];
    if (quote != 0) {
      code += c;
      if (c == '\\' && i + 1 < source.size()) {
        code += source[++i];
      } else if (c == quote) {
        quote = 0;
      }
    } else if (c == '/' && i + 1 < source.size() && source[i + 1] == '/') {
      while (i < source.size() && source[i] != '\n') {
        ++i;
      }
      code += '\n';
    } else {
      quote = (c == '"' || c == '\'') ? c : 0;
      code += c;
    }
  }
  return code;
}

// A 128-bit content hash of everything that changes the binary.
std::string cache_key(const std::string& source, int arch) {
  const NvrtcVersion version = nvrtc_version();
  std::ostringstream material;
  material << without_line_comments(source) << '\0';
  for (const std::string& option : nvrtc_options(arch, {})) {
    material << option << '\0';
  }
  material << "nvrtc" << version.major << "." << version.minor;
  const std::string text = material.str();
  char hex[33];
  std::snprintf(hex, sizeof(hex), "%016llx%016llx",
      static_cast<unsigned long long>(fnv1a(text, 0xcbf29ce484222325ULL)),
      static_cast<unsigned long long>(fnv1a(text, 0x84222325cbf29ce4ULL)));
  return hex;
}

std::optional<std::string> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return std::nullopt;
  }
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

// Written to a temporary name and renamed, so that a concurrent reader never
// sees half a file.
void write_file_atomically(const std::filesystem::path& path, const std::string& content) {
  const std::filesystem::path tmp = path.string() + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) {
      return;  // a read-only cache folder only costs recompiles
    }
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
  }
  std::error_code ignored;
  std::filesystem::rename(tmp, path, ignored);
}

struct Binary {
  std::string image;
  double compile_ms = 0.0;
  bool from_disk = false;
};

std::mutex cache_mutex;
std::map<std::string, Binary>& binaries() {
  static std::map<std::string, Binary> cache;
  return cache;
}
std::map<std::pair<std::string, int>, LoadedKernel>& loaded_kernels() {
  static std::map<std::pair<std::string, int>, LoadedKernel> cache;
  return cache;
}

void dump_compile_time(const std::string& name, const Binary& binary) {
  if (dump_enabled(DumpOption::compile_time)) {
    dump_stream() << "nvfuse: " << name << ": "
                  << (binary.from_disk
                             ? "loaded from the disk cache"
                             : "compiled by NVRTC in " + std::to_string(binary.compile_ms) + " ms")
                  << std::endl;
  }
}

std::filesystem::path disk_file(const std::string& key) {
  const std::string directory = kernel_cache_directory();
  return directory.empty() ? std::filesystem::path()
                           : std::filesystem::path(directory + "/" + key + ".bin");
}

// From memory or the disk cache, without compiling. Under cache_mutex.
const Binary* cached_binary(const std::string& key, const std::string& name) {
  auto& cache = binaries();
  if (auto it = cache.find(key); it != cache.end()) {
    return &it->second;
  }
  const std::filesystem::path file = disk_file(key);
  if (file.empty()) {
    return nullptr;
  }
  auto image = read_file(file);
  if (!image.has_value()) {
    return nullptr;
  }
  Binary binary;
  binary.image = std::move(*image);
  binary.from_disk = true;
  dump_compile_time(name, binary);
  return &cache.emplace(key, std::move(binary)).first->second;
}

// NVRTC's work, without cache_mutex held: written to the disk cache.
Binary compile_binary(
    const std::string& key, const std::string& source, const std::string& name, int arch) {
  const NvtxRange range("nvfuse compile " + name);
  CompiledBinary compiled = compile_cuda(source, name, arch);
  Binary binary;
  binary.image = std::move(compiled.image);
  binary.compile_ms = compiled.compile_ms;
  const std::filesystem::path file = disk_file(key);
  if (!file.empty()) {
    write_file_atomically(file, binary.image);
  }
  return binary;
}

// One of the slots that background compiles share, held for a compile.
// NVRTC takes a core and a few hundred MB per compile, so a fusion of many
// kernels queues them rather than start all. A waiting compile polls every
// millisecond (a compile takes tens of them): std::condition_variable's
// wait is a libstdc++ symbol newer than manylinux_2_28 allows.
class CompileSlot {
 public:
  CompileSlot() {
    static const int capacity = slot_count();
    int seen = in_use().load();
    while (seen >= capacity || !in_use().compare_exchange_weak(seen, seen + 1)) {
      if (seen >= capacity) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        seen = in_use().load();
      }
    }
  }
  ~CompileSlot() { --in_use(); }
  CompileSlot(const CompileSlot&) = delete;
  CompileSlot& operator=(const CompileSlot&) = delete;

 private:
  static std::atomic<int>& in_use() {
    static std::atomic<int> count{0};
    return count;
  }

  // The cores this process may use, shared among the processes torchrun
  // started on the host (LOCAL_WORLD_SIZE): at most 8, at least 1.
  static int slot_count() {
    int cores = static_cast<int>(std::thread::hardware_concurrency());
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0) {
      cores = CPU_COUNT(&allowed);
    }
    int processes = 1;
    if (const char* local = std::getenv("LOCAL_WORLD_SIZE")) {
      processes = std::max(1, std::atoi(local));
    }
    return std::clamp(cores / processes, 1, 8);
  }
};

Binary compile_in_background(
    const std::string& key, const std::string& source, const std::string& name, int arch) {
  const CompileSlot slot;
  return compile_binary(key, source, name, arch);
}

// Compiles on background threads (set_tiered_compile, compile_ahead.h),
// one per source, at most one per slot at a time.
// Their futures are waited for at exit, before NVRTC (loaded before the
// first of them) is unloaded.
std::map<std::string, std::shared_future<Binary>>& background_compiles() {
  static std::map<std::string, std::shared_future<Binary>> pending;
  return pending;
}

// The binary of `key`: cached, a background compile's (waited for), or
// compiled now. Under `lock` (cache_mutex), released while waiting.
const Binary& binary_for(std::unique_lock<std::mutex>& lock, const std::string& key,
    const std::string& source, const std::string& name, int arch) {
  if (const Binary* cached = cached_binary(key, name)) {
    return *cached;
  }
  auto& pending = background_compiles();
  if (auto it = pending.find(key); it != pending.end()) {
    std::shared_future<Binary> compile = it->second;
    lock.unlock();
    compile.wait();
    lock.lock();
    if (const Binary* done = cached_binary(key, name)) {
      return *done;  // another thread stored it meanwhile
    }
    pending.erase(key);
    dump_compile_time(name, compile.get());
    return binaries().emplace(key, compile.get()).first->second;
  }
  Binary binary = compile_binary(key, source, name, arch);
  dump_compile_time(name, binary);
  return binaries().emplace(key, std::move(binary)).first->second;
}

const LoadedKernel& load_binary(
    const Binary& binary, const std::string& key, const std::string& name, int device, int arch) {
  LoadedKernel kernel;
  kernel.name = name;
  kernel.function = cuda_driver::get_function(cuda_driver::load_module(binary.image), name);
  kernel.resources = cuda_driver::resources_of(kernel.function);
  if (arch >= 90) {
    cuda_driver::allow_non_portable_clusters(kernel.function);
  }
  return loaded_kernels().emplace(std::make_pair(key + "/" + name, device), kernel).first->second;
}

std::atomic<bool>& tiered_setting() {
  static std::atomic<bool> on = [] {
    const char* env = std::getenv("NVFUSE_TIERED_COMPILE");
    return env != nullptr && std::string(env) == "1";
  }();
  return on;
}

}  // namespace

std::string kernel_cache_directory() {
  const char* enabled = std::getenv("NVFUSE_DISK_CACHE");
  if (enabled != nullptr && std::string(enabled) == "0") {
    return "";
  }
  std::string directory;
  if (const char* dir = std::getenv("NVFUSE_CACHE_DIR")) {
    directory = dir;
  } else if (const char* xdg = std::getenv("XDG_CACHE_HOME")) {
    directory = std::string(xdg) + "/nvfuse";
  } else if (const char* home = std::getenv("HOME")) {
    directory = std::string(home) + "/.cache/nvfuse";
  } else {
    return "";
  }
  directory += "/kernels";
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  return error ? "" : directory;
}

namespace {

// load_kernel, and with `wait` false load_kernel_when_compiled.
const LoadedKernel* load(
    const std::string& source, const std::string& name, int device, bool wait) {
  cuda_driver::make_context_current(device);
  const int arch = cuda_driver::properties(device).arch;
  const std::string key = cache_key(source, arch);
  std::unique_lock<std::mutex> lock(cache_mutex);
  // One binary per source; each of its kernels is loaded by name.
  if (auto it = loaded_kernels().find({key + "/" + name, device}); it != loaded_kernels().end()) {
    return &it->second;
  }
  if (!wait && cached_binary(key, name) == nullptr) {
    auto& pending = background_compiles();
    auto it = pending.find(key);
    if (it == pending.end()) {
      pending.emplace(key,
          std::async(std::launch::async, compile_in_background, key, source, name, arch).share());
      return nullptr;
    }
    if (it->second.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      return nullptr;
    }
  }
  return &load_binary(binary_for(lock, key, source, name, arch), key, name, device, arch);
}

}  // namespace

const LoadedKernel& load_kernel(const std::string& source, const std::string& name, int device) {
  return *load(source, name, device, /*wait=*/true);
}

const LoadedKernel* load_kernel_when_compiled(
    const std::string& source, const std::string& name, int device) {
  return load(source, name, device, /*wait=*/false);
}

void set_tiered_compile(bool on) { tiered_setting() = on; }
bool tiered_compile() { return tiered_setting(); }

}  // namespace nvfuse
