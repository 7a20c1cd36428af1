// Fusion::clone: copies every node in creation order (which is topological),
// so each node's references are already cloned when it is.
#include "ir/all_exprs.h"
#include "ir/fusion.h"

namespace nvfuse {

namespace {

template <typename T>
T* mapped(const CloneMap& map, const T* val) {
  if (val == nullptr) {
    return nullptr;
  }
  auto it = map.find(val);
  NVFUSE_ASSERT(it != map.end(), "cloning refers to a Val not yet cloned (",
      static_cast<int>(val->val_kind()), " number ", val->number(), ")");
  if constexpr (std::is_same_v<T, Val>) {
    return it->second;
  } else {
    return it->second->template as<T>();
  }
}

template <typename T>
std::vector<T*> mapped(const CloneMap& map, const std::vector<T*>& vals) {
  std::vector<T*> result;
  result.reserve(vals.size());
  for (const T* v : vals) {
    result.push_back(mapped(map, v));
  }
  return result;
}

Val* clone_val(Fusion& target, const Val* val, CloneMap& map);

// The clone of `scalar`, cloned now when it was created after the axis
// that refers to it (multi-device localization gives axes new extents).
// Its definition, if any, is attached when that expr is cloned.
Scalar* scalar_clone(Fusion& target, const Scalar* scalar, CloneMap& map) {
  if (scalar == nullptr) {
    return nullptr;
  }
  if (auto it = map.find(scalar); it != map.end()) {
    return it->second->as<Scalar>();
  }
  Val* copy = clone_val(target, scalar, map);
  map[scalar] = copy;
  return copy->as<Scalar>();
}

Val* clone_val(Fusion& target, const Val* val, CloneMap& map) {
  switch (val->val_kind()) {
    case ValKind::kScalar: {
      const auto* s = val->as<Scalar>();
      return target.create<Scalar>(
          s->dtype(), s->is_constant() ? std::optional<ScalarValue>(s->value()) : std::nullopt);
    }
    case ValKind::kIterDomain: {
      const auto* id = val->as<IterDomain>();
      return target.create<IterDomain>(scalar_clone(target, id->extent(), map), id->iter_type(),
          scalar_clone(target, id->expanded_extent(), map), id->parallel_type());
    }
    case ValKind::kTensorView: {
      // Allocation and loop domains may hold axes created after this tensor;
      // they are set once everything is cloned.
      const auto* tv = val->as<TensorView>();
      auto* copy = target.create<TensorView>(
          TensorDomain(mapped(map, tv->logical())), tv->dtype(), tv->is_cpu_scalar());
      copy->set_any_strides(tv->any_strides());
      if (tv->device_mesh().has_value()) {
        copy->set_device_mesh(*tv->device_mesh());
      }
      return copy;
    }
  }
  NVFUSE_ASSERT(false, "unknown ValKind");
  return nullptr;
}

}  // namespace

Expr* Fusion::create_expr(ExprKind kind, ExprFields fields) {
  switch (kind) {
#define NVFUSE_CREATE_CASE(Kind, kernels) \
  case ExprKind::Kind:                    \
    return create<Kind>(std::move(fields));
    NVFUSE_EXPR_KINDS(NVFUSE_CREATE_CASE)
#undef NVFUSE_CREATE_CASE
  }
  NVFUSE_ASSERT(false, "unknown ExprKind");
  return nullptr;
}

std::unique_ptr<Fusion> Fusion::clone(CloneMap* map_out) const {
  auto copy = std::make_unique<Fusion>();
  CloneMap map;
  for (const auto& node : statements_) {
    if (const auto* val = dynamic_cast<const Val*>(node.get())) {
      if (!map.count(val)) {
        map[val] = clone_val(*copy, val, map);
      }
      continue;
    }
    const auto* expr = static_cast<const Expr*>(node.get());
    ExprFields fields = expr->fields();
    fields.inputs = mapped(map, fields.inputs);
    fields.outputs = mapped(map, fields.outputs);
    copy->create_expr(expr->kind(), std::move(fields));
  }
  for (const auto& [old_val, new_val] : map) {
    if (!old_val->is<TensorView>()) {
      continue;
    }
    const TensorDomain& domain = old_val->as<TensorView>()->domain();
    auto* tv = new_val->as<TensorView>();
    tv->set_allocation_domain(mapped(map, domain.allocation()), domain.contiguity());
    tv->set_loop_domain(mapped(map, domain.loop()));
  }
  copy->inputs_ = mapped(map, inputs_);
  copy->outputs_ = mapped(map, outputs_);
  for (const auto& [output, input] : output_aliases_) {
    copy->output_aliases_[map.at(output)] = mapped(map, input);
  }
  for (const ExtentEquality& eq : extent_equalities_) {
    copy->extent_equalities_.push_back(
        {mapped(map, eq.a), mapped(map, eq.b), mapped(map, eq.result)});
  }
  if (one_ != nullptr) {
    copy->one_ = mapped(map, one_);
  }
  if (map_out != nullptr) {
    *map_out = std::move(map);
  }
  return copy;
}

}  // namespace nvfuse
