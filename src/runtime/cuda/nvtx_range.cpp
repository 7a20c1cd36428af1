#include "runtime/cuda/nvtx_range.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <string_view>

#if NVFUSE_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace nvfuse {

#if NVFUSE_HAVE_NVTX

namespace {

nvtxDomainHandle_t domain() {
  static const nvtxDomainHandle_t handle = nvtxDomainCreateA("nvfuse");
  return handle;
}

void push(const char* message) {
  nvtxEventAttributes_t attributes = {};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attributes.message.ascii = message;
  nvtxDomainRangePushEx(domain(), &attributes);
}

// "<what> <detail>" into `message`, cut to fit: these run on every
// execute and segment, so no printf-style formatting.
template <size_t N>
const char* joined(char (&message)[N], const char* what, std::string_view detail) {
  const size_t what_size = std::min(std::strlen(what), N - 2);
  std::memcpy(message, what, what_size);
  message[what_size] = ' ';
  const size_t detail_size = std::min(detail.size(), N - 2 - what_size);
  std::memcpy(message + what_size + 1, detail.data(), detail_size);
  message[what_size + 1 + detail_size] = '\0';
  return message;
}

}  // namespace

NvtxRange::NvtxRange(const char* message) { push(message); }

NvtxRange::NvtxRange(const char* what, int64_t number) {
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof(digits), number).ptr;
  char message[96];
  push(joined(message, what, std::string_view(digits, end - digits)));
}

NvtxRange::NvtxRange(const char* what, const std::string& detail) {
  char message[128];
  push(joined(message, what, detail));
}

NvtxRange::~NvtxRange() { nvtxDomainRangePop(domain()); }

#else

NvtxRange::NvtxRange(const char*) {}
NvtxRange::NvtxRange(const char*, int64_t) {}
NvtxRange::NvtxRange(const char*, const std::string&) {}
NvtxRange::~NvtxRange() {}

#endif

}  // namespace nvfuse
