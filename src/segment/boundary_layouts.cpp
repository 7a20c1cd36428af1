#include "segment/boundary_layouts.h"

#include <numeric>

namespace nvfuse {

namespace {

bool has_memory_on_every_axis(const TensorView& tv) {
  if (tv.device_mesh().has_value()) {
    return false;  // a sharded tensor's layout is its sharding's
  }
  for (const IterDomain* id : tv.logical()) {
    if (id->is_broadcast() || id->is_expanded()) {
      return false;
    }
  }
  return tv.rank() >= 2;
}

// Extents that may be equal: the same scalar, or not two different
// constants. (A pointwise result's extent may be an expanded input's
// symbolic one where a sibling input fixes the same axis as a constant.)
bool compatible_extent(const Scalar* a, const Scalar* b) {
  if (a == b) {
    return true;
  }
  const auto x = a->constant_int();
  const auto y = b->constant_int();
  return !x.has_value() || !y.has_value() || *x == *y;
}

bool compatible_extents(const TensorView& a, const TensorView& b) {
  if (a.rank() != b.rank()) {
    return false;
  }
  for (int64_t axis = 0; axis < a.rank(); ++axis) {
    if (!compatible_extent(a.logical()[axis]->extent(), b.logical()[axis]->extent())) {
      return false;
    }
  }
  return true;
}

// nullopt for an allocation derived by splits (a sharded tensor's).
std::optional<std::vector<int64_t>> allocation_order_of(const TensorView& tv) {
  if (!tv.domain().has_allocation()) {
    std::vector<int64_t> row_major(tv.rank());
    std::iota(row_major.begin(), row_major.end(), 0);
    return row_major;
  }
  return tv.domain().allocation_permutation();
}

}  // namespace

std::optional<std::vector<int64_t>> boundary_allocation_order(
    const Fusion& fusion, const TensorView& tv) {
  if (!has_memory_on_every_axis(tv)) {
    return std::nullopt;
  }
  std::optional<std::vector<int64_t>> agreed;
  const auto vote = [&](const Val* val) {
    if (!val->is<TensorView>()) {
      return true;
    }
    const auto& other = *val->as<TensorView>();
    if (!has_memory_on_every_axis(other) || !compatible_extents(tv, other)) {
      return true;
    }
    std::optional<std::vector<int64_t>> order = allocation_order_of(other);
    if (!order.has_value() || (agreed.has_value() && *agreed != *order)) {
      return false;
    }
    agreed = std::move(order);
    return true;
  };
  for (const Val* in : fusion.inputs()) {
    if (!vote(in)) {
      return std::nullopt;
    }
  }
  for (const Val* out : fusion.outputs()) {
    if (!vote(out)) {
      return std::nullopt;
    }
  }
  if (!agreed.has_value() || std::is_sorted(agreed->begin(), agreed->end())) {
    return std::nullopt;  // row-major, the default
  }
  return agreed;
}

std::optional<std::vector<int64_t>> written_allocation_order(
    const Fusion& fusion, const TensorView& tv) {
  if (tv.domain().has_allocation()) {
    return tv.domain().allocation_permutation();
  }
  return boundary_allocation_order(fusion, tv);
}

void lay_out_boundaries(
    const Fusion& fusion, const std::vector<const Val*>& outputs, const CloneMap& map) {
  for (const Val* out : outputs) {
    if (fusion.is_output(out) || !out->is<TensorView>() ||
        out->as<TensorView>()->domain().has_allocation()) {
      continue;
    }
    const auto order = boundary_allocation_order(fusion, *out->as<TensorView>());
    if (!order.has_value()) {
      continue;
    }
    auto* copy = map.at(out)->as<TensorView>();
    std::vector<IterDomain*> allocation;
    for (int64_t axis : *order) {
      allocation.push_back(copy->logical()[axis]);
    }
    copy->set_allocation_domain(allocation, TensorDomain::contiguous_for(allocation));
  }
}

}  // namespace nvfuse
