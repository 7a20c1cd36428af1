#include "runtime/cuda/dynamic_library.h"

#include <dlfcn.h>

#include <mutex>
#include <sstream>

#include "ir/errors.h"

namespace nvfuse {

DynamicLibrary::DynamicLibrary(const std::string& what, const std::vector<std::string>& candidates)
    : what_(what) {
  std::ostringstream tried;
  for (const std::string& candidate : candidates) {
    handle_ = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ != nullptr) {
      path_ = candidate;
      return;
    }
    const char* error = dlerror();
    tried << "\n  " << candidate << ": " << (error ? error : "not found");
  }
  NVFUSE_UNSUPPORTED("running on a CUDA device needs ", what,
      ", which could not be loaded. "
      "Tried:",
      tried.str());
}

DynamicLibrary::~DynamicLibrary() {
  // Never dlclose: kernels and contexts created through the library may
  // outlive this object at process exit.
}

void* DynamicLibrary::symbol(const char* name) const {
  void* address = dlsym(handle_, name);
  NVFUSE_CHECK_AS(ErrorKind::kUnsupported, address != nullptr, what_, " (", path_,
      ") lacks the function ", name, "; it may be too old");
  return address;
}

namespace {
std::mutex search_mutex;
std::vector<std::string>& search_directories() {
  static std::vector<std::string> directories;
  return directories;
}
}  // namespace

void add_nvrtc_search_directory(const std::string& directory) {
  std::lock_guard<std::mutex> lock(search_mutex);
  search_directories().push_back(directory);
}

std::vector<std::string> nvrtc_search_directories() {
  std::lock_guard<std::mutex> lock(search_mutex);
  return search_directories();
}

}  // namespace nvfuse
