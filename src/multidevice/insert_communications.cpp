#include "multidevice/insert_communications.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "ir/all_exprs.h"
#include "ir/axis_flow.h"
#include "ir/sharding.h"
#include "multidevice/lower_reshardings.h"
#include "ops/pointwise.h"

namespace nvfuse {

namespace {

// `sharding` with split (not whole-axis) DID axes, for apply_sharding.
Sharding as_splits(Sharding sharding) {
  sharding.whole_axis.assign(sharding.mesh_axis.size(), false);
  return sharding;
}

TensorView* distributed_copy(TensorView* tv, const Sharding& sharding) {
  auto* copy = pointwise(OpType::set, {tv})->as<TensorView>();
  apply_sharding(copy, as_splits(sharding));
  return copy;
}

// The distribution of `comm.tensor` (now `current`) after `comm`, which
// serves an expr whose output is distributed as `out`.
Sharding after(const Communication& comm, Sharding current, const Sharding& out) {
  switch (comm.type) {
    case CommunicationType::Allgather:
      current.mesh_axis[comm.axis] = -1;
      return current;
    case CommunicationType::AllToAll: {
      const int m = current.mesh_axis[comm.axis];
      current.mesh_axis[comm.axis] = -1;
      current.mesh_axis[comm.to_axis] = m;
      return current;
    }
    case CommunicationType::Scatter:
    case CommunicationType::Broadcast:
    case CommunicationType::Gather:
    case CommunicationType::SendRecv:
      current.mesh = out.mesh;
      std::fill(current.mesh_axis.begin(), current.mesh_axis.end(), -1);
      if (comm.type == CommunicationType::Scatter) {
        current.mesh_axis[comm.axis] = 0;
      }
      return current;
    default:
      NVFUSE_ASSERT(false, "not an input-side communication: ", comm.to_string());
      return current;
  }
}

// Axes of input `input` of `expr` (distributed as `in`) that are whole where
// the output (distributed as `out`) is sharded: they must be sliced so the
// expr sees local extents only.
std::optional<Sharding> sliced_for(
    const Expr& expr, size_t input, const Sharding& in, const Sharding& out) {
  const auto flow = axis_flow(expr, input);
  if (!flow.has_value() || in.mesh != out.mesh) {
    return std::nullopt;
  }
  Sharding sliced = with_local_slices(
      *flow, *expr.input(input)->as<TensorView>(), in, *expr.output(0)->as<TensorView>(), out);
  const bool any = sliced.mesh_axis != in.mesh_axis;
  return any ? std::optional<Sharding>(sliced) : std::nullopt;
}

class Inserter {
 public:
  explicit Inserter(Fusion& fusion) : fusion_(fusion) {}

  HostSteps run() {
    // Keyed by output: inserting replaces the exprs (never their outputs).
    std::map<const Val*, std::vector<Communication>> by_output;
    for (const Communication& comm : lower_reshardings(fusion_)) {
      by_output[comm.expr->output(0)].push_back(comm);
    }
    std::vector<Val*> produced;
    for (Expr* expr : fusion_.exprs()) {
      produced.push_back(expr->output(0));
    }
    for (Val* value : produced) {
      if (!value->is<TensorView>() || !value->as<TensorView>()->device_mesh().has_value()) {
        continue;
      }
      auto it = by_output.find(value);
      static const std::vector<Communication> kNone;
      decompose(value->definition(), it == by_output.end() ? kNone : it->second);
    }
    return std::move(steps_);
  }

 private:
  void decompose(Expr* expr, const std::vector<Communication>& comms) {
    auto* out = expr->output(0)->as<TensorView>();
    const Sharding out_sharding = sharding_of(*out);
    std::unordered_map<const Val*, Val*> substitutions;
    // An input read twice (mul(x, x)) is lowered once per read; move it once.
    std::set<std::tuple<const TensorView*, CommunicationType, int64_t, int64_t>> done;
    for (const Communication& comm : comms) {
      if (is_reducing(comm.type) ||
          !done.emplace(comm.tensor, comm.type, comm.axis, comm.to_axis).second) {
        continue;
      }
      auto* current = const_cast<TensorView*>(comm.tensor);
      if (auto it = substitutions.find(comm.tensor); it != substitutions.end()) {
        current = it->second->as<TensorView>();
      }
      TensorView* moved =
          distributed_copy(current, after(comm, sharding_of(*current), out_sharding));
      Communication step = comm;
      step.expr = moved->definition();
      step.tensor = current;
      steps_.communications.push_back(step);
      substitutions[comm.tensor] = moved;
    }
    for (size_t i = 0; i < expr->inputs().size(); ++i) {
      const Val* original = expr->input(i);
      if (!original->is<TensorView>() || !original->as<TensorView>()->device_mesh().has_value()) {
        continue;
      }
      auto it = substitutions.find(original);
      auto* current = it != substitutions.end()
          ? it->second->as<TensorView>()
          : const_cast<TensorView*>(original->as<TensorView>());
      if (auto sliced = sliced_for(*expr, i, sharding_of(*current), out_sharding)) {
        TensorView* slice = distributed_copy(current, *sliced);
        steps_.local_slices.push_back(slice->definition());
        substitutions[original] = slice;
      }
    }
    if (!substitutions.empty()) {
      fusion_.replace_inputs(expr, substitutions);
    }
    for (const Communication& comm : comms) {
      if (is_reducing(comm.type)) {
        combine_partials(out, out_sharding, comm);
      }
    }
  }

  // `out` becomes the partial result; a set after it combines the partials
  // and takes its place for every consumer and as a fusion output.
  void combine_partials(TensorView* out, const Sharding& out_sharding, const Communication& comm) {
    const std::vector<Expr*> uses = out->distinct_uses();
    TensorView* combined = distributed_copy(out, out_sharding);
    if (comm.type == CommunicationType::Reduce) {
      // The partial results live on the input's mesh, one whole copy per
      // device; the root gets their combination.
      clear_sharding(out);
      out->set_device_mesh(comm.mesh);
    } else if (comm.type == CommunicationType::ReduceScatter) {
      // The partial result is whole along the scattered axis.
      Sharding partial = out_sharding;
      partial.mesh_axis[comm.axis] = -1;
      clear_sharding(out);
      apply_sharding(out, as_splits(partial));
    }
    for (Expr* use : uses) {
      fusion_.replace_inputs(use, {{out, combined}});
    }
    if (fusion_.is_output(out)) {
      std::vector<Val*> outputs = fusion_.outputs();
      std::replace(
          outputs.begin(), outputs.end(), static_cast<Val*>(out), static_cast<Val*>(combined));
      fusion_.set_outputs(std::move(outputs));
    }
    Communication step = comm;
    step.expr = combined->definition();
    step.tensor = out;
    steps_.communications.push_back(step);
  }

  Fusion& fusion_;
  HostSteps steps_;
};

}  // namespace

HostSteps insert_communications(Fusion& fusion) { return Inserter(fusion).run(); }

}  // namespace nvfuse
