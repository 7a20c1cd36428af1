#include "runtime/compile_ahead.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "ir/all_exprs.h"
#include "ir/fusion.h"

namespace nvfuse {

namespace {

thread_local bool scope_alive = false;
thread_local size_t deferred_launches = 0;

std::atomic<bool>& compile_ahead_setting() {
  static std::atomic<bool> on = [] {
    const char* env = std::getenv("NVFUSE_COMPILE_AHEAD");
    return env == nullptr || std::strcmp(env, "0") != 0;
  }();
  return on;
}

}  // namespace

CompileAheadScope::CompileAheadScope()
    : outer_alive_(scope_alive), outer_deferred_(deferred_launches) {
  scope_alive = true;
  deferred_launches = 0;
}

// A scope opened inside another (a fusion executed from a dump sink during
// a first pass, say) hands the outer one back its state, its deferrals
// added: the outer pass then knows its values include ATen's.
CompileAheadScope::~CompileAheadScope() {
  scope_alive = outer_alive_;
  deferred_launches += outer_deferred_;
}

size_t CompileAheadScope::deferred() const { return deferred_launches; }

bool compiling_ahead() { return scope_alive; }

void note_compiled_ahead() {
  if (scope_alive) {
    ++deferred_launches;
  }
}

bool may_compile_ahead(const Fusion& fusion) {
  for (const Val* out : fusion.outputs()) {
    if (fusion.aliased_input(out) != nullptr) {
      return false;
    }
  }
  for (const Expr* expr : fusion.exprs()) {
    if (expr->is<RngOp>() || expr->is<SdpaFwdOp>()) {
      return false;
    }
  }
  return true;
}

void set_compile_ahead(bool on) { compile_ahead_setting() = on; }

bool compile_ahead() { return compile_ahead_setting(); }

}  // namespace nvfuse
