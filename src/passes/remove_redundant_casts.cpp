#include "passes/remove_redundant_casts.h"

#include "ir/fusion.h"

namespace nvfuse {

void remove_redundant_casts(Fusion& fusion) {
  for (Expr* expr : fusion.exprs()) {
    if (!expr->is<CastOp>()) {
      continue;
    }
    Val* middle = expr->input(0);
    Expr* inner = middle->definition();
    if (inner == nullptr || !inner->is<CastOp>()) {
      continue;
    }
    Val* source = inner->input(0);
    // x -> B must be exact; B -> C may round. The outer cast then reads x
    // directly; the inner one is dropped when nothing else uses it.
    if (is_lossless_cast(source->dtype(), middle->dtype())) {
      fusion.replace_inputs(expr, {{middle, source}});
    }
  }
}

}  // namespace nvfuse
