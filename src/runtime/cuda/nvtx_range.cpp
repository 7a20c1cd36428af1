#include "runtime/cuda/nvtx_range.h"

#include <cstdio>

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

}  // namespace

NvtxRange::NvtxRange(const char* message) {
  push(message);
}

NvtxRange::NvtxRange(const char* what, int64_t number) {
  char message[96];
  std::snprintf(message, sizeof(message), "%s %lld", what, static_cast<long long>(number));
  push(message);
}

NvtxRange::NvtxRange(const char* what, const std::string& detail) {
  char message[128];
  std::snprintf(message, sizeof(message), "%s %s", what, detail.c_str());
  push(message);
}

NvtxRange::~NvtxRange() {
  nvtxDomainRangePop(domain());
}

#else

NvtxRange::NvtxRange(const char*) {}
NvtxRange::NvtxRange(const char*, int64_t) {}
NvtxRange::NvtxRange(const char*, const std::string&) {}
NvtxRange::~NvtxRange() {}

#endif

}  // namespace nvfuse
