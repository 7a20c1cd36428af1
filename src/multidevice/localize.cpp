#include "multidevice/localize.h"

#include <map>
#include <unordered_set>

#include "ir/all_exprs.h"
#include "ir/extent_arith.h"
#include "ir/sharding.h"

namespace nvfuse {

namespace {

class Localizer {
 public:
  explicit Localizer(Fusion& fusion) : fusion_(fusion) {}

  void run() {
    std::vector<TensorView*> tensors;
    for (const auto& statement : fusion_.statements()) {
      if (auto* tv = dynamic_cast<TensorView*>(statement.get())) {
        tensors.push_back(tv);
      }
    }
    for (TensorView* tv : tensors) {
      if (tv->device_mesh().has_value()) {
        localize_extents(tv, sharding_of(*tv));
      }
    }
    localize_equalities();
    localize_size_operands();
    keep_global_extents();
    for (TensorView* tv : tensors) {
      clear_sharding(tv);
    }
  }

 private:
  void localize_extents(TensorView* tv, const Sharding& sharding) {
    for (size_t a = 0; a < sharding.mesh_axis.size(); ++a) {
      const int m = sharding.mesh_axis[a];
      if (m < 0) {
        continue;
      }
      IterDomain* id = tv->logical()[a];
      if (!localized_.insert(id).second) {
        continue;
      }
      const int64_t devices = sharding.mesh->size(m);
      if (sharding.whole_axis[a]) {
        if (!id->extent()->is_constant()) {
          global_values_.emplace_back(id->extent(), fusion_.index_constant(devices));
        }
        id->set_extent(fusion_.one());
        continue;
      }
      id->set_extent(local_extent(id->extent(), devices, *tv, a));
    }
  }

  Scalar* local_extent(Scalar* global, int64_t devices, const TensorView& tv, size_t axis) {
    auto key = std::make_pair(static_cast<const Scalar*>(global), devices);
    if (auto it = local_.find(key); it != local_.end()) {
      return it->second;
    }
    Scalar* local = nullptr;
    if (auto n = global->constant_int()) {
      NVFUSE_CHECK(*n % devices == 0, tv.name(), ": axis ", axis, " of extent ", *n,
          " does not split evenly over ", devices, " devices");
      local = fusion_.index_constant(*n / devices);
    } else {
      local = fusion_.create<Scalar>(DataType::Index, std::nullopt);
      global_values_.emplace_back(global, extent_mul(local, fusion_.index_constant(devices)));
    }
    local_[key] = local;
    by_global_[global].push_back(local);
    return local;
  }

  // An equality between two sharded extents holds between their local
  // extents (when each was localized one way only).
  void localize_equalities() {
    const auto single = [this](Scalar* s) -> Scalar* {
      auto it = by_global_.find(s);
      return it != by_global_.end() && it->second.size() == 1 ? it->second[0] : nullptr;
    };
    const std::vector<ExtentEquality> equalities = fusion_.extent_equalities();
    for (const ExtentEquality& eq : equalities) {
      Scalar* a = single(eq.a);
      Scalar* b = single(eq.b);
      if (a != nullptr && b != nullptr) {
        fusion_.add_extent_equality(a, b, eq.result);
      }
    }
  }

  // Size operands name global extents: a reshape's sizes of its sharded
  // output axes, and a slice's end of a sharded axis it takes whole (a cut
  // one is gathered first). They take the local extents.
  void localize_size_operands() {
    for (Expr* expr : fusion_.exprs()) {
      if (expr->is<ReshapeOp>()) {
        const auto& axes = expr->output(0)->as<TensorView>()->logical();
        for (size_t c = 0; c < axes.size(); ++c) {
          expr = localize_operand(expr, 1 + c, axes[c]);
        }
      } else if (expr->is<SliceOp>()) {
        const auto& axes = expr->input(0)->as<TensorView>()->logical();
        for (size_t a = 0; a < axes.size(); ++a) {
          expr = localize_operand(expr, 2 + 3 * a, axes[a]);
        }
      }
    }
  }

  // Scalar operands that still name a global extent (a mean's element
  // count over a sharded axis) keep its value: the local extent times the
  // device count. Nothing binds the global symbol once its axis is local.
  void keep_global_extents() {
    std::unordered_set<const Scalar*> done;
    for (auto& [global, value] : global_values_) {
      if (done.insert(global).second) {
        fusion_.replace_all_uses(global, value);
      }
    }
  }

  Expr* localize_operand(Expr* expr, size_t position, IterDomain* axis) {
    if (localized_.count(axis) == 0 || expr->input(position) == axis->extent()) {
      return expr;
    }
    return fusion_.replace_input_at(expr, position, axis->extent());
  }

  Fusion& fusion_;
  std::unordered_set<const IterDomain*> localized_;
  std::map<std::pair<const Scalar*, int64_t>, Scalar*> local_;
  std::map<const Scalar*, std::vector<Scalar*>> by_global_;
  std::vector<std::pair<Scalar*, Scalar*>> global_values_;
};

}  // namespace

void localize(Fusion& segment) { Localizer(segment).run(); }

}  // namespace nvfuse
