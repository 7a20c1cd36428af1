#include "ir/dump.h"

#include <bitset>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <sstream>

namespace nvfuse {

namespace {

constexpr const char* kNames[] = {
#define NVFUSE_DUMP_NAME(name) #name,
    NVFUSE_DUMP_OPTIONS(NVFUSE_DUMP_NAME)
#undef NVFUSE_DUMP_NAME
};
constexpr size_t kCount = sizeof(kNames) / sizeof(kNames[0]);

std::bitset<kCount> parse_dump_env() {
  std::bitset<kCount> enabled;
  const char* env = std::getenv("NVFUSE_DUMP");
  if (env == nullptr) {
    return enabled;
  }
  std::stringstream list(env);
  std::string item;
  while (std::getline(list, item, ',')) {
    if (item.empty()) {
      continue;
    }
    bool known = false;
    for (size_t i = 0; i < kCount; ++i) {
      if (item == kNames[i]) {
        enabled.set(i);
        known = true;
      }
    }
    if (!known) {
      std::cerr << "nvfuse: NVFUSE_DUMP names an unknown option '" << item
                << "'; valid options:";
      for (const char* name : kNames) {
        std::cerr << " " << name;
      }
      std::cerr << std::endl;
    }
  }
  return enabled;
}

}  // namespace

bool dump_enabled(DumpOption option) {
  static const std::bitset<kCount> enabled = parse_dump_env();
  return enabled.test(static_cast<size_t>(option));
}

namespace {
thread_local std::unique_ptr<std::ostringstream> captured_dumps;
}  // namespace

std::ostream& dump_stream() {
  if (captured_dumps != nullptr) {
    return *captured_dumps;
  }
  return std::cerr;
}

void start_dump_capture() {
  captured_dumps = std::make_unique<std::ostringstream>();
}

std::string finish_dump_capture() {
  if (captured_dumps == nullptr) {
    return "";
  }
  std::string text = captured_dumps->str();
  captured_dumps.reset();
  return text;
}

void dump(const std::string& what, const std::string& text) {
  dump_stream() << "===== nvfuse " << what << " =====\n" << text << std::flush;
}

}  // namespace nvfuse
