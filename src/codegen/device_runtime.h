#pragma once

#include <string>

namespace nvfuse {

// The device runtime (device_runtime.cuh), embedded at build time; every
// generated kernel starts with it.
const std::string& device_runtime_source();

}  // namespace nvfuse
