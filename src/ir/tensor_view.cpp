#include "ir/tensor_view.h"

#include <algorithm>
#include <sstream>

#include "ir/axes.h"
#include "ir/extent_arith.h"
#include "ir/fusion.h"

namespace nvfuse {

TensorView::TensorView(Fusion* fusion, TensorDomain domain, DataType dtype, bool is_cpu_scalar)
    : Val(fusion, ValKind::kTensorView, dtype),
      domain_(std::move(domain)),
      is_cpu_scalar_(is_cpu_scalar) {
  NVFUSE_ASSERT(!is_cpu_scalar_ || domain_.rank() == 0, "a CPU scalar tensor must be 0-d");
}

IterDomain* TensorView::logical_axis(int64_t axis) const {
  return logical()[normalize_axis(axis, rank(), "logical_axis")];
}

IterDomain* TensorView::axis(int64_t axis) const {
  return domain_.loop()[normalize_axis(axis, loop_rank(), "axis")];
}

void TensorView::split(int64_t axis, Scalar* factor, bool inner_split) {
  axis = normalize_axis(axis, loop_rank(), "split");
  IterDomain* in = domain_.loop()[axis];
  NVFUSE_CHECK(!in->is_broadcast(), "split: axis ", axis, " of ", name(), " is a broadcast axis");
  Fusion* f = fusion();
  Scalar* split_extent = extent_ceil_div(in->extent(), factor);
  Scalar* outer_extent = inner_split ? split_extent : factor;
  Scalar* inner_extent = inner_split ? factor : split_extent;
  auto* outer = f->create<IterDomain>(outer_extent, in->iter_type());
  auto* inner = f->create<IterDomain>(inner_extent, in->iter_type());
  Split::make(outer, inner, in, factor, inner_split);
  std::vector<IterDomain*> loop = domain_.loop();
  loop[axis] = inner;
  loop.insert(loop.begin() + axis, outer);
  domain_.set_loop(std::move(loop));
}

void TensorView::split(int64_t axis, int64_t factor, bool inner_split) {
  NVFUSE_CHECK(factor > 0, "split: factor must be positive, got ", factor);
  split(axis, fusion()->index_constant(factor), inner_split);
}

void TensorView::merge(int64_t outer_axis, int64_t inner_axis) {
  outer_axis = normalize_axis(outer_axis, loop_rank(), "merge");
  inner_axis = normalize_axis(inner_axis, loop_rank(), "merge");
  NVFUSE_CHECK(outer_axis != inner_axis, "merge: cannot merge axis ", outer_axis, " with itself");
  IterDomain* outer = domain_.loop()[outer_axis];
  IterDomain* inner = domain_.loop()[inner_axis];
  const bool both_broadcast = outer->is_broadcast() && inner->is_broadcast();
  auto* out = fusion()->create<IterDomain>(extent_mul(outer->extent(), inner->extent()),
      both_broadcast ? IterType::kBroadcast : IterType::kIteration);
  Merge::make(out, outer, inner);
  std::vector<IterDomain*> loop = domain_.loop();
  loop[std::min(outer_axis, inner_axis)] = out;
  loop.erase(loop.begin() + std::max(outer_axis, inner_axis));
  domain_.set_loop(std::move(loop));
}

void TensorView::reorder(const std::vector<int64_t>& new_order) {
  NVFUSE_CHECK(static_cast<int64_t>(new_order.size()) == loop_rank() && is_permutation(new_order),
      "reorder: the order must be a permutation of 0..", loop_rank() - 1);
  std::vector<IterDomain*> loop;
  loop.reserve(new_order.size());
  for (int64_t old_position : new_order) {
    loop.push_back(domain_.loop()[old_position]);
  }
  domain_.set_loop(std::move(loop));
}

void TensorView::set_allocation_domain(
    std::vector<IterDomain*> allocation, std::vector<std::optional<bool>> contiguity) {
  domain_.set_allocation(std::move(allocation), std::move(contiguity));
}

void TensorView::set_loop_domain(std::vector<IterDomain*> loop) {
  domain_.set_loop(std::move(loop));
}

std::vector<int64_t> TensorView::stride_order() const {
  if (!domain_.has_allocation()) {
    return {};
  }
  auto order = domain_.allocation_permutation();
  NVFUSE_ASSERT(
      order.has_value(), name(), "'s allocation domain is not a permutation of its logical domain");
  return stride_order_from_allocation_order(*order);
}

std::string TensorView::to_string() const {
  auto join = [](const std::vector<IterDomain*>& ids) {
    std::ostringstream ss;
    ss << "[";
    for (size_t i = 0; i < ids.size(); ++i) {
      ss << (i ? ", " : "") << ids[i]->to_string();
    }
    ss << "]";
    return ss.str();
  };
  std::string text = name() + "_" + name_of(dtype()) + join(logical());
  if (is_cpu_scalar_) {
    text += " (cpu)";
  }
  if (domain_.has_allocation()) {
    text += " allocation=" + join(domain_.allocation());
  }
  if (domain_.loop() != domain_.logical()) {
    text += " loop=" + join(domain_.loop());
  }
  return text;
}

std::vector<TensorView*> tensors_of(const Fusion& fusion) {
  std::vector<TensorView*> tensors;
  for (Val* in : fusion.inputs()) {
    if (in->is<TensorView>()) {
      tensors.push_back(in->as<TensorView>());
    }
  }
  for (Expr* expr : fusion.exprs()) {
    for (Val* out : expr->outputs()) {
      if (out->is<TensorView>()) {
        tensors.push_back(out->as<TensorView>());
      }
    }
  }
  return tensors;
}

}  // namespace nvfuse
