#include "ir/errors.h"

namespace nvfuse::detail {

void throw_error(
    ErrorKind kind, const char* file, int line, const char* condition, const std::string& message) {
  if (kind != ErrorKind::kInternal) {
    // User errors carry only the message: it names the input or op at fault.
    throw Error(kind, message);
  }
  throw Error(kind,
      str_cat("nvfuse internal error (a bug in nvfuse; please report it with the "
              "repro script) at ",
          file, ":", line, ": `", condition, "` failed. ", message));
}

}  // namespace nvfuse::detail
