#include "ops/sort.h"

#include "ir/axes.h"
#include "ir/fusion.h"
#include "ir/sort_exprs.h"
#include "ops/new_axes.h"

namespace nvfuse {

namespace {

// torch sorts every real and integer dtype; Bool and complex have no order
// in its CUDA sorts.
void check_orderable(const TensorView* in, const char* op) {
  NVFUSE_TYPE_CHECK(!is_boolean(in->dtype()) && !is_complex(in->dtype()), op,
      ": the operand must be a real or integer tensor, got ", in->dtype());
}

// The operand's axes, an expanded one (stride 0) made an ordinary axis of
// its size: the sort's results are dense tensors from ATen.
std::vector<IterDomain*> result_axes(Fusion* fusion, const TensorView* in) {
  std::vector<IterDomain*> axes;
  for (const IterDomain* id : in->logical()) {
    axes.push_back(id->is_expanded()
            ? fusion->create<IterDomain>(id->logical_extent(), IterType::kIteration)
            : copy_axis(fusion, id));
  }
  return axes;
}

}  // namespace

std::pair<TensorView*, TensorView*> topk(
    TensorView* in, Scalar* k, int64_t dim, bool largest, bool sorted) {
  check_orderable(in, "topk");
  NVFUSE_TYPE_CHECK(is_integral(k->dtype()), "topk: k must be an integer, got ", k->dtype());
  const int64_t axis = normalize_axis(dim, std::max<int64_t>(in->rank(), 1), "topk");
  Fusion* fusion = in->fusion();
  std::vector<IterDomain*> axes = result_axes(fusion, in);
  if (in->rank() > 0) {
    const auto size = in->logical()[axis]->logical_extent()->constant_int();
    if (const auto count = k->constant_int()) {
      NVFUSE_CHECK(*count >= 0 && (!size.has_value() || *count <= *size), "topk: k is ", *count,
          ", expected 0 <= k <= ", size.has_value() ? std::to_string(*size) : "the size of dim",
          " (dim ", axis, ")");
    }
    axes[axis] = axis_of_extent(fusion, k);
  }
  TensorView* values = tensor_of_axes(fusion, axes, in->dtype());
  TensorView* indices = new_tensor_like_axes(fusion, axes, DataType::Int);
  fusion->create<TopkOp>(ExprFields{
      {in, k}, {values, indices}, {{"dim", axis}, {"largest", largest}, {"sorted", sorted}}});
  return {values, indices};
}

TensorView* argsort(TensorView* in, int64_t dim, bool descending, bool stable) {
  check_orderable(in, "argsort");
  const int64_t axis = normalize_axis(dim, std::max<int64_t>(in->rank(), 1), "argsort");
  Fusion* fusion = in->fusion();
  TensorView* out = tensor_of_axes(fusion, result_axes(fusion, in), DataType::Int);
  fusion->create<ArgsortOp>(
      ExprFields{{in}, {out}, {{"dim", axis}, {"descending", descending}, {"stable", stable}}});
  return out;
}

}  // namespace nvfuse
