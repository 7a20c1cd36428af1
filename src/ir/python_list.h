// `[1, 2, 3]`, `[True, False]`: a sequence as a Python list literal (and
// `True`: a bool as Python's), for printed IR, error messages and printed definitions.
#pragma once

#include <sstream>
#include <string>
#include <type_traits>

namespace nvfuse {

template <typename Sequence>
std::string python_list(const Sequence& values) {
  std::ostringstream ss;
  ss << "[";
  for (size_t i = 0; i < values.size(); ++i) {
    ss << (i ? ", " : "");
    if constexpr (std::is_same_v<std::decay_t<decltype(values[i])>, bool>) {
      ss << (values[i] ? "True" : "False");
    } else {
      ss << values[i];
    }
  }
  ss << "]";
  return ss.str();
}

inline std::string python_bool(bool value) { return value ? "True" : "False"; }

}  // namespace nvfuse
