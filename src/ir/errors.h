// Errors say whose fault they are. A user error (a bad definition or a bad
// execute() input) becomes a typed Python exception naming the offending
// input or op; an internal error says it is a bug in nvfuse.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace nvfuse {

// Each kind maps to one Python exception class (nvfuse/errors.py).
enum class ErrorKind {
  kDefinition,      // DefinitionError (ValueError): a bad FusionDefinition
  kDefinitionType,  // DefinitionTypeError (TypeError): wrong operand kind/dtype
  kInput,           // InputError (ValueError): execute() input vs. definition
  kInputType,       // InputTypeError (TypeError): execute() input type/dtype
  kUnsupported,     // UnsupportedError (NotImplementedError): not built yet
  kInternal,        // InternalError (RuntimeError): a bug in nvfuse
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

namespace detail {

template <typename... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream ss;
  ((ss << args), ...);
  return ss.str();
}

[[noreturn]] void throw_error(
    ErrorKind kind, const char* file, int line, const char* condition, const std::string& message);

}  // namespace detail
}  // namespace nvfuse

#define NVFUSE_CHECK_AS(kind, cond, ...)                                            \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      ::nvfuse::detail::throw_error(                                                \
          kind, __FILE__, __LINE__, #cond, ::nvfuse::detail::str_cat(__VA_ARGS__)); \
    }                                                                               \
  } while (0)

// A user error in a definition.
#define NVFUSE_CHECK(cond, ...) NVFUSE_CHECK_AS(::nvfuse::ErrorKind::kDefinition, cond, __VA_ARGS__)
// A user error in a definition: an operand of the wrong kind or dtype.
#define NVFUSE_TYPE_CHECK(cond, ...) \
  NVFUSE_CHECK_AS(::nvfuse::ErrorKind::kDefinitionType, cond, __VA_ARGS__)
// A user error in the inputs given to execute().
#define NVFUSE_INPUT_CHECK(cond, ...) \
  NVFUSE_CHECK_AS(::nvfuse::ErrorKind::kInput, cond, __VA_ARGS__)
#define NVFUSE_INPUT_TYPE_CHECK(cond, ...) \
  NVFUSE_CHECK_AS(::nvfuse::ErrorKind::kInputType, cond, __VA_ARGS__)
// Valid input that nvfuse does not handle yet.
#define NVFUSE_UNSUPPORTED(...) \
  NVFUSE_CHECK_AS(::nvfuse::ErrorKind::kUnsupported, false, __VA_ARGS__)
// An internal invariant: failing it is a bug in nvfuse.
#define NVFUSE_ASSERT(cond, ...) NVFUSE_CHECK_AS(::nvfuse::ErrorKind::kInternal, cond, __VA_ARGS__)

#define NVFUSE_CHECK_EQ(a, b, ...) \
  NVFUSE_CHECK(                    \
      (a) == (b), "expected ", #a, " == ", #b, ", got ", (a), " vs ", (b), ". ", __VA_ARGS__)
#define NVFUSE_ASSERT_EQ(a, b, ...) \
  NVFUSE_ASSERT(                    \
      (a) == (b), "expected ", #a, " == ", #b, ", got ", (a), " vs ", (b), ". ", __VA_ARGS__)
