#include "passes/propagate_shardings.h"

#include <optional>

#include "ir/all_exprs.h"
#include "ir/axis_flow.h"
#include "ir/sharding.h"

namespace nvfuse {

namespace {

bool is_contraction(const Expr& expr) { return expr.is<LinearOp>() || expr.is<MatmulOp>(); }

Sharding unsharded(const DeviceMesh& mesh, int64_t rank) {
  Sharding s;
  s.mesh = mesh;
  s.mesh_axis.assign(rank, -1);
  s.whole_axis.assign(rank, false);
  return s;
}

// Output `output` of `expr`'s sharding when it follows input `input`.
std::optional<Sharding> carried_forward(const Expr& expr, size_t input, size_t output) {
  const auto* in = expr.input(input)->as<TensorView>();
  const auto& out = *expr.output(output)->as<TensorView>();
  const auto flow = axis_flow(expr, input, output);
  if (!flow.has_value()) {
    return std::nullopt;
  }
  const Sharding from = sharding_of(*in);
  Sharding s = unsharded(*from.mesh, out.rank());
  for (size_t a = 0; a < from.mesh_axis.size(); ++a) {
    const int m = from.mesh_axis[a];
    if (m < 0 || !keeps_sharding(*flow, a, *in, out, from.mesh->size(m))) {
      continue;
    }
    const int64_t c = flow->to_output[a];
    if (!out.logical()[c]->is_broadcast()) {
      s.mesh_axis[c] = m;
      s.whole_axis[c] = from.whole_axis[a] && !flow->resized[a];
    }
  }
  return s;
}

// Input `input`'s sharding from `expr`'s output, and from its contraction
// partner's summed axis.
std::optional<Sharding> carried_backward(const Expr& expr, size_t input) {
  const auto* in = expr.input(input)->as<TensorView>();
  const auto* out = expr.output(0)->as<TensorView>();
  const auto flow = axis_flow(expr, input);
  if (!flow.has_value()) {
    return std::nullopt;
  }
  const TensorView* partner = nullptr;
  if (is_contraction(expr) && input < 2) {
    partner = expr.input(1 - input)->as<TensorView>();
    partner = partner->device_mesh().has_value() ? partner : nullptr;
  }
  if (!out->device_mesh().has_value() && partner == nullptr) {
    return std::nullopt;
  }
  const DeviceMesh& mesh =
      out->device_mesh().has_value() ? *out->device_mesh() : *partner->device_mesh();
  Sharding s = unsharded(mesh, in->rank());
  if (out->device_mesh() == mesh) {
    const Sharding to = sharding_of(*out);
    for (int64_t a = 0; a < in->rank(); ++a) {
      const int64_t c = flow->to_output[a];
      if (c < 0 || to.mesh_axis[c] < 0 || in->logical()[a]->is_broadcast() ||
          !keeps_sharding(*flow, a, *in, *out, mesh.size(to.mesh_axis[c]))) {
        continue;
      }
      s.mesh_axis[a] = to.mesh_axis[c];
      s.whole_axis[a] = to.whole_axis[c] && !flow->resized[a];
    }
  }
  if (partner != nullptr && partner->device_mesh() == mesh) {
    const Sharding other = sharding_of(*partner);
    const auto partner_flow = axis_flow(expr, 1 - input);
    auto summed_axis = [](const AxisFlow& f) {
      for (size_t a = 0; a < f.summed.size(); ++a) {
        if (f.summed[a]) {
          return static_cast<int64_t>(a);
        }
      }
      return int64_t{-1};
    };
    const int64_t mine = summed_axis(*flow);
    const int64_t theirs = partner_flow.has_value() ? summed_axis(*partner_flow) : -1;
    if (mine >= 0 && theirs >= 0 && other.mesh_axis[theirs] >= 0 &&
        s.logical_axis_on(other.mesh_axis[theirs]) < 0) {
      s.mesh_axis[mine] = other.mesh_axis[theirs];
    }
  }
  return s;
}

bool can_take_sharding(const Val* v) {
  if (!v->is<TensorView>()) {
    return false;
  }
  const auto* tv = v->as<TensorView>();
  return !tv->device_mesh().has_value() && tv->domain().loop() == tv->logical();
}

// The input an output follows: a contraction's sharded weight (second
// operand), else the input with the most sharded axes.
std::optional<size_t> reference_input(const Expr& expr) {
  std::optional<size_t> best;
  int best_count = -1;
  for (size_t i = 0; i < expr.inputs().size(); ++i) {
    const Val* v = expr.input(i);
    if (!v->is<TensorView>() || !v->as<TensorView>()->device_mesh().has_value()) {
      continue;
    }
    const Sharding s = sharding_of(*v->as<TensorView>());
    if (is_contraction(expr) && i == 1 && s.is_sharded()) {
      return i;
    }
    int count = 0;
    for (int m : s.mesh_axis) {
      count += m >= 0;
    }
    if (count > best_count) {
      best = i;
      best_count = count;
    }
  }
  return best;
}

bool propagate_forward(Fusion& fusion) {
  bool changed = false;
  for (Expr* expr : fusion.exprs()) {
    const auto reference = reference_input(*expr);
    if (!reference.has_value()) {
      continue;
    }
    for (size_t o = 0; o < expr->outputs().size(); ++o) {
      Val* out = expr->output(o);
      if (!can_take_sharding(out)) {
        continue;
      }
      auto* tv = out->as<TensorView>();
      // The outputs of exprs sharding does not follow live on the same
      // mesh, whole.
      std::optional<Sharding> s = carried_forward(*expr, *reference, o);
      if (!s.has_value()) {
        s = unsharded(*expr->input(*reference)->as<TensorView>()->device_mesh(), tv->rank());
      }
      apply_sharding(tv, *s);
      changed = true;
    }
  }
  return changed;
}

bool propagate_backward(Fusion& fusion) {
  bool changed = false;
  const std::vector<Expr*> exprs = fusion.exprs();
  for (auto it = exprs.rbegin(); it != exprs.rend(); ++it) {
    for (size_t i = 0; i < (*it)->inputs().size(); ++i) {
      if (!can_take_sharding((*it)->input(i))) {
        continue;
      }
      if (auto s = carried_backward(**it, i)) {
        apply_sharding((*it)->input(i)->as<TensorView>(), *s);
        changed = true;
      }
    }
  }
  return changed;
}

}  // namespace

bool has_device_mesh(const Fusion& fusion) {
  for (const Val* v : fusion.inputs()) {
    if (v->is<TensorView>() && v->as<TensorView>()->device_mesh().has_value()) {
      return true;
    }
  }
  for (const Expr* expr : fusion.exprs()) {
    for (const Val* v : expr->outputs()) {
      if (v->is<TensorView>() && v->as<TensorView>()->device_mesh().has_value()) {
        return true;
      }
    }
  }
  return false;
}

void propagate_shardings(Fusion& fusion) {
  if (!has_device_mesh(fusion)) {
    return;
  }
  // Forward from the annotations, back to the unannotated inputs, and
  // forward again from what they got.
  propagate_forward(fusion);
  if (propagate_backward(fusion)) {
    propagate_forward(fusion);
  }
}

}  // namespace nvfuse
