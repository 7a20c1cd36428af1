#include "segment/segment_builder.h"

#include <algorithm>
#include <unordered_set>

#include "ir/all_exprs.h"
#include "ir/sharding.h"
#include "segment/boundary_layouts.h"

namespace nvfuse {

namespace {

// A copy of `tv`'s logical axes (same extents) as a new input tensor of
// `fusion` that accepts whatever layout its producer segment returns. Its
// allocation order, when given, is the one the producer writes it in
// (boundary_layouts.h): not checked, but what the plans of this segment's
// kernels read (which axis is innermost in memory).
TensorView* boundary_input(
    Fusion& fusion, const TensorView* tv, const std::optional<std::vector<int64_t>>& order) {
  std::vector<IterDomain*> axes;
  std::vector<std::optional<bool>> contiguity;
  for (const IterDomain* id : tv->logical()) {
    axes.push_back(fusion.create<IterDomain>(id->extent(), id->iter_type(), id->expanded_extent()));
    contiguity.push_back(id->is_broadcast() ? std::nullopt : std::optional<bool>(false));
  }
  auto* input =
      fusion.create<TensorView>(TensorDomain(axes, contiguity), tv->dtype(), tv->is_cpu_scalar());
  if (order.has_value()) {
    std::vector<IterDomain*> allocation;
    std::vector<std::optional<bool>> allocation_contiguity;
    for (int64_t axis : *order) {
      allocation.push_back(axes[axis]);
      allocation_contiguity.push_back(contiguity[axis]);
    }
    input->set_allocation_domain(allocation, allocation_contiguity);
  }
  input->set_any_strides(true);
  if (tv->device_mesh().has_value()) {
    // A multi-device segment's input stays distributed as its producer's
    // output (localize() then gives it local extents).
    apply_sharding(input, sharding_of(*tv));
  }
  fusion.add_input(input);
  return input;
}

// The symbolic scalars without a definition that `scalar` is computed
// from and that `provided` does not bind. (Derived scalars are always
// recomputed from their roots: the reference evaluator binds roots only.)
// `visited` holds the scalars walked already: extents are DAGs (a chain of
// slices and pads makes each extent of the one before, read twice), which
// a walk without it takes exponentially long to cover.
void collect_missing(const Scalar* scalar, const std::unordered_set<const Val*>& provided,
    std::unordered_set<const Scalar*>& visited, std::vector<const Scalar*>& missing) {
  if (scalar->is_constant() || !visited.insert(scalar).second) {
    return;
  }
  const Expr* def = scalar->definition();
  if (def == nullptr) {
    if (!provided.count(scalar)) {
      missing.push_back(scalar);
    }
    return;
  }
  for (const Val* in : def->inputs()) {
    collect_missing(in->as<Scalar>(), provided, visited, missing);
  }
}

// Positions of the original inputs (the first `original_count` of
// `piece`'s) that the piece reads, or that bind a size it needs and no
// kept input binds; then every boundary input. Binding only these keeps a
// part's per-call validation proportional to what it uses.
std::vector<size_t> needed_inputs(const Fusion& piece, size_t original_count) {
  const auto& inputs = piece.inputs();
  std::vector<bool> keep(inputs.size(), false);
  std::unordered_set<const Val*> provided;
  const auto provide = [&](size_t i) {
    keep[i] = true;
    provided.insert(inputs[i]);
    if (inputs[i]->is<TensorView>()) {
      for (const IterDomain* id : inputs[i]->as<TensorView>()->logical()) {
        provided.insert(id->logical_extent());
      }
    }
  };
  std::unordered_set<const Val*> read;
  for (const Expr* expr : piece.exprs()) {
    read.insert(expr->inputs().begin(), expr->inputs().end());
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i >= original_count || read.count(inputs[i])) {
      provide(i);
    }
  }
  std::vector<const Scalar*> missing;
  std::unordered_set<const Scalar*> visited;
  for (const Expr* expr : piece.exprs()) {
    for (const Val* in : expr->inputs()) {
      if (in->is<Scalar>()) {
        collect_missing(in->as<Scalar>(), provided, visited, missing);
      }
    }
    for (const Val* out : expr->outputs()) {
      if (out->is<TensorView>()) {
        for (const IterDomain* id : out->as<TensorView>()->logical()) {
          collect_missing(id->logical_extent(), provided, visited, missing);
        }
      }
    }
  }
  for (const Scalar* root : missing) {
    for (size_t i = 0; i < original_count && !provided.count(root); ++i) {
      const Val* in = inputs[i];
      const bool binds = in == root ||
          (in->is<TensorView>() &&
              std::any_of(in->as<TensorView>()->logical().begin(),
                  in->as<TensorView>()->logical().end(),
                  [root](const IterDomain* id) { return id->logical_extent() == root; }));
      if (binds) {
        provide(i);
      }
    }
  }
  std::vector<size_t> positions;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (keep[i]) {
      positions.push_back(i);
    }
  }
  return positions;
}

// A segment output that the fusion writes into one of its inputs stays an
// in-place update of the segment's copy of that input when no other
// segment reads the input (none could see it change early). The segment's
// kernel then writes the input itself where that is safe
// (KernelIo::in_place_target), and no copy into the input follows the
// fusion's call: a cut fusion (batch norm's statistics, then its
// normalization) otherwise updated its running statistics with a copy
// each.
void keep_in_place_updates(const Fusion& fusion, const std::unordered_set<const Expr*>& in_segment,
    const CloneMap& map, const FusionSegment& segment, Fusion& piece) {
  for (const Val* out : segment.outputs) {
    const TensorView* target = fusion.aliased_input(out);
    if (target == nullptr) {
      continue;
    }
    const bool read_elsewhere = std::any_of(target->uses().begin(), target->uses().end(),
        [&](const Expr* use) { return !in_segment.count(use); });
    auto* cloned_target = map.at(target)->as<TensorView>();
    if (!read_elsewhere && piece.is_input(cloned_target)) {
      piece.alias_output_to_input(map.at(out)->as<TensorView>(), cloned_target);
    }
  }
}

}  // namespace

FusionSegment build_segment(const Fusion& fusion, const std::vector<const Expr*>& members,
    bool is_aten, const std::unordered_set<const Expr*>& recomputed) {
  std::unordered_set<const Expr*> in_segment(members.begin(), members.end());
  FusionSegment segment;
  segment.is_aten = is_aten;
  std::unordered_set<const Val*> seen;
  for (const Expr* expr : members) {
    for (const Val* in : expr->inputs()) {
      const Expr* def = in->definition();
      if (in->is<TensorView>() && def != nullptr && !in_segment.count(def) &&
          seen.insert(in).second) {
        segment.boundary.push_back(in);
      }
    }
    for (const Val* out : expr->outputs()) {
      bool used_outside = fusion.is_output(out);
      for (const Expr* use : out->uses()) {
        used_outside = used_outside || (!in_segment.count(use) && !recomputed.count(expr));
      }
      if (used_outside) {
        segment.outputs.push_back(out);
      }
    }
  }
  CloneMap map;
  segment.fusion = fusion.clone(&map);
  Fusion& piece = *segment.fusion;
  for (const Val* b : segment.boundary) {
    Val* cloned = map.at(b);
    piece.replace_all_uses(cloned,
        boundary_input(piece, cloned->as<TensorView>(),
            written_allocation_order(fusion, *b->as<TensorView>())));
  }
  std::vector<Val*> outputs;
  for (const Val* out : segment.outputs) {
    outputs.push_back(map.at(out));
  }
  piece.set_outputs(std::move(outputs));
  if (!is_aten) {
    lay_out_boundaries(fusion, segment.outputs, map);
  }
  const size_t original_count = fusion.inputs().size();
  std::vector<size_t> kept = needed_inputs(piece, original_count);
  for (size_t position : kept) {
    if (position < original_count) {
      segment.inputs.push_back(position);
    }
  }
  piece.retain_inputs(kept);
  keep_in_place_updates(fusion, in_segment, map, segment, piece);
  return segment;
}

}  // namespace nvfuse
