// Exhaustive dispatch over Expr kinds, generated from NVFUSE_EXPR_KINDS:
//   dispatch(expr, [&](const auto* e) { ... });
// or a visitor with one operator() per kind. A new kind that a visitor does
// not handle fails to compile.
#pragma once

#include "ir/all_exprs.h"

namespace nvfuse {

template <typename Visitor>
decltype(auto) dispatch(const Expr* expr, Visitor&& visitor) {
  switch (expr->kind()) {
#define NVFUSE_DISPATCH_CASE(kind, kernels) \
  case ExprKind::kind:                      \
    return visitor(expr->as<kind>());
    NVFUSE_EXPR_KINDS(NVFUSE_DISPATCH_CASE)
#undef NVFUSE_DISPATCH_CASE
  }
  NVFUSE_ASSERT(false, "unknown ExprKind");
  return visitor(expr->as<PointwiseOp>());
}

}  // namespace nvfuse
