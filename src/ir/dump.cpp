#include "ir/dump.h"

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>

#include "ir/errors.h"

namespace nvfuse {

namespace {

constexpr const char* kNames[] = {
#define NVFUSE_DUMP_NAME(name) #name,
    NVFUSE_DUMP_OPTIONS(NVFUSE_DUMP_NAME)
#undef NVFUSE_DUMP_NAME
};
constexpr size_t kCount = sizeof(kNames) / sizeof(kNames[0]);
static_assert(kCount <= 32, "the enabled options are one 32-bit mask");

std::string valid_names() {
  std::string names;
  for (const char* name : kNames) {
    names += names.empty() ? "" : " ";
    names += name;
  }
  return names;
}

// The mask of `list`; `unknown` receives each name that is not an option.
uint32_t parse_options(const std::string& list, std::vector<std::string>& unknown) {
  uint32_t mask = 0;
  std::stringstream items(list);
  std::string item;
  while (std::getline(items, item, ',')) {
    if (item.empty()) {
      continue;
    }
    bool known = false;
    for (size_t i = 0; i < kCount; ++i) {
      if (item == kNames[i]) {
        mask |= 1u << i;
        known = true;
      }
    }
    if (!known) {
      unknown.push_back(item);
    }
  }
  return mask;
}

uint32_t options_from_environment() {
  const char* env = std::getenv("NVFUSE_DUMP");
  if (env == nullptr) {
    return 0;
  }
  std::vector<std::string> unknown;
  const uint32_t mask = parse_options(env, unknown);
  for (const std::string& name : unknown) {
    std::cerr << "nvfuse: NVFUSE_DUMP names an unknown option '" << name
              << "'; valid options: " << valid_names() << std::endl;
  }
  return mask;
}

std::atomic<uint32_t>& enabled_mask() {
  static std::atomic<uint32_t> mask{options_from_environment()};
  return mask;
}

std::mutex sink_mutex;
std::shared_ptr<std::function<void(const std::string&)>> dump_sink;

// Collects what is written and hands it to the sink at each flush.
class SinkBuffer : public std::stringbuf {
 protected:
  int sync() override {
    std::string text = str();
    str("");
    if (text.empty()) {
      return 0;
    }
    std::shared_ptr<std::function<void(const std::string&)>> sink;
    {
      std::lock_guard<std::mutex> lock(sink_mutex);
      sink = dump_sink;
    }
    if (sink != nullptr) {
      try {
        (*sink)(text);
        return 0;
      } catch (...) {
        // A failing sink (a logging handler that raised) must not fail the
        // execute that dumped: the text goes to stderr instead.
      }
    }
    std::cerr << text << std::flush;
    return 0;
  }
};

thread_local std::unique_ptr<std::ostringstream> captured_dumps;

}  // namespace

bool dump_enabled(DumpOption option) {
  return (enabled_mask().load(std::memory_order_relaxed) >> static_cast<uint32_t>(option)) & 1u;
}

void set_dump_options(const std::string& list) {
  std::vector<std::string> unknown;
  const uint32_t mask = parse_options(list, unknown);
  NVFUSE_CHECK_AS(ErrorKind::kDefinition, unknown.empty(), "set_dump: unknown option '",
      unknown.empty() ? "" : unknown.front(), "'; valid options: ", valid_names());
  enabled_mask().store(mask, std::memory_order_relaxed);
}

std::string dump_options() {
  const uint32_t mask = enabled_mask().load(std::memory_order_relaxed);
  std::string list;
  for (size_t i = 0; i < kCount; ++i) {
    if ((mask >> i) & 1u) {
      list += list.empty() ? "" : ",";
      list += kNames[i];
    }
  }
  return list;
}

void set_dump_sink(std::function<void(const std::string&)> sink) {
  std::lock_guard<std::mutex> lock(sink_mutex);
  dump_sink =
      sink ? std::make_shared<std::function<void(const std::string&)>>(std::move(sink)) : nullptr;
}

std::ostream& dump_stream() {
  if (captured_dumps != nullptr) {
    return *captured_dumps;
  }
  thread_local SinkBuffer buffer;
  thread_local std::ostream stream(&buffer);
  return stream;
}

void start_dump_capture() { captured_dumps = std::make_unique<std::ostringstream>(); }

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
