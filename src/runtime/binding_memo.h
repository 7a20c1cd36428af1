// The last call's input binding of one segment, reused while a call's
// arguments look the same to binding: every tensor's dtype, device, sizes
// and strides, and every scalar's value. Binding validates each argument
// against the definition and checks every extent equality the ops
// recorded, which made it the largest of nvfuse's own steps in a segment
// of a real model's graph (a batch-norm backward's equalities are
// hundreds); what it checks depends on nothing else, so a call that looks
// the same passes the same way and binds the same sizes.
#pragma once

#include <ATen/core/Tensor.h>

#include <mutex>
#include <optional>
#include <variant>
#include <vector>

#include "runtime/input_binding.h"

namespace nvfuse {

class BindingMemo {
 public:
  // bind_inputs(fusion, args, device), or a copy of the last call's result
  // when `args` and `device` look the same to it.
  BoundInputs bind(const Fusion& fusion, const std::vector<Argument>& args, c10::Device device);

 private:
  struct TensorLayout {
    bool defined = false;
    at::ScalarType dtype = at::ScalarType::Undefined;
    c10::Device device = c10::Device(c10::kCPU);
    std::vector<int64_t> sizes;
    std::vector<int64_t> strides;
  };
  using ArgumentLayout = std::variant<TensorLayout, ScalarValue>;

  static ArgumentLayout layout_of(const Argument& arg);
  static bool looks_the_same(const ArgumentLayout& layout, const Argument& arg);
  bool matches(const std::vector<Argument>& args, c10::Device device) const;

  std::mutex mutex_;  // calls may come from threads
  std::vector<ArgumentLayout> last_args_;
  c10::Device last_device_ = c10::Device(c10::kCPU);
  std::optional<BoundInputs> last_;
};

}  // namespace nvfuse
