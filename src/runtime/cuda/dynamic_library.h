// dlopen with a list of candidate paths, so that nvfuse imports and runs its
// CPU path on machines without a GPU, a driver or a CUDA toolkit: NVRTC and
// libcuda are loaded only when a CUDA tensor first needs them.
#pragma once

#include <string>
#include <vector>

namespace nvfuse {

class DynamicLibrary {
 public:
  // Tries `candidates` in order; throws an UnsupportedError naming `what`,
  // every path tried and each dlerror() when none loads.
  DynamicLibrary(const std::string& what, const std::vector<std::string>& candidates);
  ~DynamicLibrary();
  DynamicLibrary(const DynamicLibrary&) = delete;
  DynamicLibrary& operator=(const DynamicLibrary&) = delete;

  // The address of `symbol`; throws when it is missing.
  void* symbol(const char* name) const;
  const std::string& path() const { return path_; }

 private:
  std::string what_;
  std::string path_;
  void* handle_ = nullptr;
};

// Extra directories to search for NVRTC, first (e.g. the lib folder of the
// nvidia-cuda-nvrtc wheel, found by the Python package).
void add_nvrtc_search_directory(const std::string& directory);
std::vector<std::string> nvrtc_search_directories();

}  // namespace nvfuse
