#include "passes/duplicate_shared_iotas.h"

#include <unordered_set>

#include "ir/all_exprs.h"
#include "ir/fusion.h"
#include "ops/creation.h"

namespace nvfuse {

void duplicate_shared_iotas(Fusion& fusion) {
  const std::vector<Expr*> exprs = fusion.exprs();
  const std::unordered_set<const Expr*> live(exprs.begin(), exprs.end());
  for (Expr* expr : exprs) {
    if (!expr->is<IotaOp>() || fusion.is_output(expr->output(0))) {
      continue;
    }
    Val* shared = expr->output(0);
    std::vector<Expr*> readers;
    for (Expr* use : shared->distinct_uses()) {
      if (live.count(use)) {
        readers.push_back(use);
      }
    }
    for (size_t i = 1; i < readers.size(); ++i) {
      TensorView* copy = iota(expr->input(0)->as<Scalar>(), expr->input(1)->as<Scalar>(),
          expr->input(2)->as<Scalar>(), shared->dtype());
      fusion.replace_inputs(readers[i], {{shared, copy}});
    }
  }
}

}  // namespace nvfuse
