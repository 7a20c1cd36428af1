#include "ops/broadcast.h"

#include "ir/fusion.h"

namespace nvfuse {

namespace {

bool is_keep_marker(const Scalar* size) { return size->is_constant_int(-1); }

// An extent given in a shape must be a valid size: a non-negative constant,
// or a symbolic integer.
void check_shape_entry(const Scalar* size, const char* op, size_t index) {
  NVFUSE_TYPE_CHECK(is_integral(size->dtype()), op, ": shape entry ", index,
      " must be an integer, got ", size->dtype());
  if (auto value = size->constant_int()) {
    NVFUSE_CHECK(
        *value >= 0, op, ": shape entry ", index, " is ", *value, "; sizes must be non-negative");
  }
}

// Records that `size` must equal the extent of the non-broadcast `id`.
void require_same_size(IterDomain* id, Scalar* size, const char* op, size_t index,
    std::vector<std::pair<Scalar*, Scalar*>>& equalities) {
  if (size == id->extent()) {
    return;
  }
  auto have = id->extent()->constant_int();
  auto want = size->constant_int();
  NVFUSE_CHECK(!(have && want && have != want), op, ": axis ", index, " has size ", *have,
      " and is not a broadcast, so it cannot become size ", *want);
  equalities.emplace_back(id->extent(), size);
}

}  // namespace

TensorView* broadcast(TensorView* in, const std::vector<bool>& is_broadcast_dim) {
  int64_t kept = 0;
  for (bool is_new : is_broadcast_dim) {
    kept += is_new ? 0 : 1;
  }
  NVFUSE_CHECK(kept == in->rank(), "broadcast: is_broadcast_dim has ", kept,
      " False entries but the input has rank ", in->rank(),
      "; there must be one False entry per input axis");
  Fusion* fusion = in->fusion();
  std::vector<IterDomain*> axes;
  int64_t next_input_axis = 0;
  for (bool is_new : is_broadcast_dim) {
    if (is_new) {
      axes.push_back(fusion->create<IterDomain>(fusion->one(), IterType::kBroadcast));
    } else {
      IterDomain* id = in->logical()[next_input_axis++];
      axes.push_back(
          fusion->create<IterDomain>(id->extent(), id->iter_type(), id->expanded_extent()));
    }
  }
  auto* out = fusion->create<TensorView>(TensorDomain(axes), in->dtype());
  BroadcastOp::make(out, in, is_broadcast_dim);
  return out;
}

TensorView* expand(TensorView* in, const std::vector<Scalar*>& shape) {
  NVFUSE_CHECK(static_cast<int64_t>(shape.size()) == in->rank(), "expand: shape has ", shape.size(),
      " entries but the input has rank ", in->rank());
  Fusion* fusion = in->fusion();
  std::vector<IterDomain*> axes;
  std::vector<std::pair<Scalar*, Scalar*>> equalities;
  for (size_t i = 0; i < shape.size(); ++i) {
    IterDomain* id = in->logical()[i];
    Scalar* size = shape[i];
    NVFUSE_TYPE_CHECK(is_integral(size->dtype()), "expand: shape entry ", i,
        " must be an integer, got ", size->dtype());
    if (is_keep_marker(size)) {
      axes.push_back(
          fusion->create<IterDomain>(id->extent(), id->iter_type(), id->expanded_extent()));
      continue;
    }
    check_shape_entry(size, "expand", i);
    if (!id->is_broadcast()) {
      require_same_size(id, size, "expand", i, equalities);
      axes.push_back(fusion->create<IterDomain>(id->extent(), id->iter_type()));
    } else if (size->is_constant_int(1)) {
      axes.push_back(fusion->create<IterDomain>(fusion->one(), IterType::kBroadcast));
    } else {
      axes.push_back(fusion->create<IterDomain>(fusion->one(), IterType::kBroadcast, size));
    }
  }
  auto* out = fusion->create<TensorView>(TensorDomain(axes), in->dtype());
  ExpandOp::make(out, in, shape);
  for (const auto& [a, b] : equalities) {
    fusion->add_extent_equality(a, b, out);
  }
  return out;
}

TensorView* broadcast_in_dim(
    TensorView* in, const std::vector<Scalar*>& shape, const std::vector<int64_t>& broadcast_dims) {
  const int64_t out_rank = static_cast<int64_t>(shape.size());
  NVFUSE_CHECK(static_cast<int64_t>(broadcast_dims.size()) == in->rank(),
      "broadcast_in_dim: broadcast_dims has ", broadcast_dims.size(),
      " entries but the input has rank ", in->rank(), "; give the output axis of each input axis");
  NVFUSE_CHECK(out_rank >= in->rank(), "broadcast_in_dim: the output shape has rank ", out_rank,
      ", less than the input's rank ", in->rank());
  std::vector<bool> is_broadcast_dim(out_rank, true);
  for (size_t i = 0; i < broadcast_dims.size(); ++i) {
    const int64_t dim = broadcast_dims[i];
    NVFUSE_CHECK(dim >= 0 && dim < out_rank, "broadcast_in_dim: broadcast_dims[", i, "] = ", dim,
        " is out of range for an output of rank ", out_rank);
    NVFUSE_CHECK(i == 0 || dim > broadcast_dims[i - 1],
        "broadcast_in_dim: broadcast_dims must be strictly increasing, got ", "[",
        broadcast_dims[i - 1], ", ", dim, ", ...]");
    is_broadcast_dim[dim] = false;
  }
  for (int64_t d = 0; d < out_rank; ++d) {
    NVFUSE_CHECK(!(is_broadcast_dim[d] && is_keep_marker(shape[d])),
        "broadcast_in_dim: shape entry ", d,
        " is -1, but only axes that come from the input can keep their size");
  }
  TensorView* result = broadcast(in, is_broadcast_dim);
  // Expand where the target size is not the broadcast's 1.
  bool needs_expand = false;
  for (int64_t d = 0; d < out_rank; ++d) {
    const IterDomain* id = result->logical()[d];
    if (id->is_broadcast() && !id->is_expanded() && !shape[d]->is_constant_int(1) &&
        !is_keep_marker(shape[d])) {
      needs_expand = true;
    }
    if (!id->is_broadcast() && shape[d]->constant_int() && !is_keep_marker(shape[d])) {
      check_shape_entry(shape[d], "broadcast_in_dim", d);
    }
  }
  if (needs_expand) {
    return expand(result, shape);
  }
  // Still check that input axes match the shape they are placed at.
  std::vector<std::pair<Scalar*, Scalar*>> equalities;
  for (int64_t d = 0; d < out_rank; ++d) {
    IterDomain* id = result->logical()[d];
    if (!id->is_broadcast() && !is_keep_marker(shape[d])) {
      require_same_size(id, shape[d], "broadcast_in_dim", d, equalities);
    }
  }
  for (const auto& [a, b] : equalities) {
    in->fusion()->add_extent_equality(a, b, result);
  }
  return result;
}

}  // namespace nvfuse
