// The kernels one executor generated: one per distinct params value (a
// schedule's printable data), each compiled through the kernel cache and
// loaded once per device, so later launches skip the cache's key
// computation (it hashes the source). Remembers the last launched one.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "codegen/kernel_args.h"
#include "ir/dump.h"
#include "ir/errors.h"
#include "runtime/cuda/kernel_cache.h"
#include "runtime/kernel_pending.h"

namespace nvfuse {

template <typename Params>
class KernelVariants {
 public:
  using Generate = std::function<KernelSource(const Params&)>;
  explicit KernelVariants(Generate generate) : generate_(std::move(generate)) {}

  // The source for `params`, generated on first use.
  std::string code_for(const Params& params) {
    std::lock_guard<std::mutex> lock(mutex_);
    return variant_for(params).source.code;
  }

  // For a launch on `device`: the source and its loaded kernel (nullptr
  // with `device` < 0: nothing to launch), remembered as the last. Where
  // `may_defer(device)` says so (tiered compilation), a kernel not compiled
  // yet is compiled in the background and the kernel is nullptr: the
  // launch is declined, and note_kernel_pending() tells the caller why.
  std::pair<const KernelSource*, const LoadedKernel*> for_launch(
      const Params& params, int device, bool (*may_defer)(int device) = nullptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    Variant& variant = variant_for(params);
    if (device < 0) {
      last_ = &variant;
      return {&variant.source, nullptr};
    }
    const LoadedKernel*& loaded = variant.loaded[device];
    if (loaded == nullptr && may_defer != nullptr && may_defer(device)) {
      loaded = load_kernel_when_compiled(variant.source.code, variant.source.name, device);
      if (loaded == nullptr) {
        note_kernel_pending();
        last_ = nullptr;  // this call runs no kernel of this executor
        last_kernel_ = nullptr;
        return {&variant.source, nullptr};
      }
    }
    if (loaded == nullptr) {
      loaded = &load_kernel(variant.source.code, variant.source.name, device);
    }
    last_ = &variant;  // a kernel still compiling is not the last one run
    last_kernel_ = loaded;
    return {&variant.source, loaded};
  }

  // Another kernel `name` of the source for_launch returned, loaded once
  // per device.
  const LoadedKernel& companion(const KernelSource* source, const std::string& name, int device) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& variant : variants_) {
      if (&variant->source == source) {
        const LoadedKernel*& loaded = variant->companions[{name, device}];
        if (loaded == nullptr) {
          loaded = &load_kernel(source->code, name, device);
        }
        return *loaded;
      }
    }
    NVFUSE_CHECK(false, "no kernel variant has this source");
    throw;  // unreachable
  }

  std::string last_code() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_ == nullptr ? std::string() : last_->source.code;
  }
  cuda_driver::FunctionResources last_resources() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_kernel_ == nullptr ? cuda_driver::FunctionResources{} : last_kernel_->resources;
  }

 private:
  struct Variant {
    Params params;
    KernelSource source;
    std::map<int, const LoadedKernel*> loaded;  // per device
    std::map<std::pair<std::string, int>, const LoadedKernel*> companions;
  };

  Variant& variant_for(const Params& params) {
    for (const auto& variant : variants_) {
      if (variant->params == params) {
        return *variant;
      }
    }
    if (dump_enabled(DumpOption::recompile) && !variants_.empty()) {
      dump("recompile", why_new(params, last_ != nullptr ? *last_ : *variants_.back()));
    }
    variants_.push_back(std::make_unique<Variant>(Variant{params, generate_(params), {}}));
    if (dump_enabled(DumpOption::params)) {
      dump("params", params.to_string() + "\n");
    }
    if (dump_enabled(DumpOption::cuda_kernel)) {
      dump("cuda_kernel", variants_.back()->source.code);
    }
    return *variants_.back();
  }

  // "Name(a, b=1, c)" -> {"a", "b=1", "c"}: the printed params' fields.
  static std::vector<std::string> fields_of(const std::string& printed) {
    std::vector<std::string> fields;
    size_t start = printed.find('(') + 1;
    while (start < printed.size()) {
      size_t end = printed.find(", ", start);
      end = end == std::string::npos ? printed.size() - 1 : end;
      fields.push_back(printed.substr(start, end - start));
      start = end + 2;
    }
    return fields;
  }

  // NVFUSE_DUMP=recompile: the fields of `params` that the kernel `before`
  // was not generated with.
  static std::string why_new(const Params& params, const Variant& before) {
    const std::string now = params.to_string();
    const std::vector<std::string> was = fields_of(before.params.to_string());
    std::string changed;
    for (const std::string& field : fields_of(now)) {
      if (std::find(was.begin(), was.end(), field) == was.end()) {
        changed += (changed.empty() ? "" : ", ") + field;
      }
    }
    return "a new kernel for " + (changed.empty() ? now : changed) +
        "\n  (the last one: " + before.params.to_string() + ")\n";
  }

  Generate generate_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Variant>> variants_;
  const Variant* last_ = nullptr;
  const LoadedKernel* last_kernel_ = nullptr;
};

}  // namespace nvfuse
