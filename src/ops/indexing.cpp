#include "ops/indexing.h"

#include "ir/axes.h"
#include "ir/fusion.h"
#include "ir/indexing_exprs.h"
#include "ops/broadcast.h"
#include "ops/new_axes.h"
#include "ops/pointwise.h"

namespace nvfuse {

namespace {

void check_index_tensor(const TensorView* index, const char* op) {
  NVFUSE_TYPE_CHECK(index->dtype() == DataType::Int || index->dtype() == DataType::Int32, op,
      ": the index tensor must have dtype Int or Int32, got ", index->dtype());
}

}  // namespace

TensorView* select(TensorView* in, Scalar* index, int64_t dim) {
  const int64_t axis = normalize_axis(dim, in->rank(), "select");
  NVFUSE_TYPE_CHECK(
      is_integral(index->dtype()), "select: index must be an integer, got ", index->dtype());
  Fusion* fusion = in->fusion();
  if (auto i = index->constant_int()) {
    if (auto extent = in->logical()[axis]->logical_extent()->constant_int()) {
      NVFUSE_CHECK(*i >= -*extent && *i < *extent, "select: index ", *i,
          " is out of range for axis ", axis, " of size ", *extent);
    }
  }
  std::vector<IterDomain*> axes;
  for (int64_t i = 0; i < in->rank(); ++i) {
    if (i != axis) {
      axes.push_back(copy_axis(fusion, in->logical()[i]));
    }
  }
  TensorView* out = tensor_of_axes(fusion, std::move(axes), in->dtype());
  fusion->create<SelectOp>(ExprFields{{in, index}, {out}, {{"dim", axis}}});
  return out;
}

TensorView* index_select(TensorView* in, TensorView* index, int64_t dim) {
  const int64_t axis = normalize_axis(dim, in->rank(), "index_select");
  check_index_tensor(index, "index_select");
  if (index->rank() == 0) {
    index = broadcast(index, {true});  // torch takes a 0-d index as [1]
  }
  NVFUSE_CHECK(
      index->rank() == 1, "index_select: index must be 0-D or 1-D, got rank ", index->rank());
  Fusion* fusion = in->fusion();
  std::vector<IterDomain*> axes = in->logical();
  axes[axis] = index->logical()[0];
  TensorView* out = new_tensor_like_axes(fusion, axes, in->dtype());
  fusion->create<IndexSelectOp>(ExprFields{{in, index}, {out}, {{"dim", axis}}});
  return out;
}

TensorView* gather(TensorView* in, TensorView* index, int64_t dim) {
  const int64_t axis = normalize_axis(dim, in->rank(), "gather");
  check_index_tensor(index, "gather");
  NVFUSE_CHECK(index->rank() == in->rank(), "gather: index has rank ", index->rank(),
      " but the input has rank ", in->rank());
  Fusion* fusion = in->fusion();
  for (int64_t i = 0; i < in->rank(); ++i) {
    auto have = index->logical()[i]->logical_extent()->constant_int();
    auto bound = in->logical()[i]->logical_extent()->constant_int();
    NVFUSE_CHECK(i == axis || !(have && bound && *have > *bound), "gather: index has ", "size ",
        *have, " at axis ", i, ", more than the input's ", *bound);
  }
  TensorView* out = new_tensor_like_axes(fusion, index->logical(), in->dtype());
  fusion->create<GatherOp>(
      ExprFields{{in, index}, {out}, {{"dim", axis}, {"take_along_axis", false}}});
  return out;
}

TensorView* take_along_axis(TensorView* in, TensorView* index, int64_t dim) {
  const int64_t axis = normalize_axis(dim, in->rank(), "take_along_axis");
  if (is_floating(index->dtype())) {
    // The predecessor took floating-point indices here (clients build them
    // with a `where` against a float zero) and truncated them: so do we.
    index = cast(index, DataType::Int)->as<TensorView>();
  }
  check_index_tensor(index, "take_along_axis");
  NVFUSE_CHECK(index->rank() == in->rank(), "take_along_axis: index has rank ", index->rank(),
      " but the input has rank ", in->rank());
  Fusion* fusion = in->fusion();
  // Off `dim`, an axis broadcast in index takes the input's size.
  std::vector<IterDomain*> axes = index->logical();
  for (int64_t i = 0; i < in->rank(); ++i) {
    if (i != axis && axes[i]->is_broadcast() && !in->logical()[i]->is_broadcast()) {
      axes[i] = in->logical()[i];
    }
  }
  TensorView* out = new_tensor_like_axes(fusion, axes, in->dtype());
  for (int64_t i = 0; i < in->rank(); ++i) {
    const IterDomain* a = index->logical()[i];
    const IterDomain* b = in->logical()[i];
    if (i != axis && !a->is_broadcast() && !b->is_broadcast()) {
      require_same_extent(a->logical_extent(), b->logical_extent(), out, "take_along_axis",
          "index and input differ in size at axis " + std::to_string(i));
    }
  }
  fusion->create<GatherOp>(
      ExprFields{{in, index}, {out}, {{"dim", axis}, {"take_along_axis", true}}});
  return out;
}

TensorView* scatter(TensorView* in, TensorView* index, TensorView* src, int64_t dim) {
  const int64_t axis = normalize_axis(dim, in->rank(), "scatter");
  check_index_tensor(index, "scatter");
  NVFUSE_CHECK(index->rank() == in->rank() && src->rank() == in->rank(),
      "scatter: input, index and src need one rank, got ", in->rank(), ", ", index->rank(), " and ",
      src->rank());
  NVFUSE_TYPE_CHECK(src->dtype() == in->dtype(), "scatter: src has dtype ", src->dtype(),
      " but the input has dtype ", in->dtype());
  Fusion* fusion = in->fusion();
  TensorView* out = new_tensor_like_axes(fusion, in->logical(), in->dtype());
  fusion->create<ScatterOp>(ExprFields{{in, index, src}, {out}, {{"dim", axis}}});
  return out;
}

TensorView* index_put_accumulate(TensorView* acc, TensorView* index, TensorView* value) {
  check_index_tensor(index, "index_put_accumulate");
  NVFUSE_CHECK(
      index->rank() == 1, "index_put_accumulate: index must be 1-D, got rank ", index->rank());
  NVFUSE_CHECK(acc->rank() >= 1 && value->rank() == acc->rank(),
      "index_put_accumulate: value must have acc's rank ", acc->rank(), ", got ", value->rank());
  NVFUSE_TYPE_CHECK(value->dtype() == acc->dtype(), "index_put_accumulate: value has dtype ",
      value->dtype(), " but acc has dtype ", acc->dtype());
  Fusion* fusion = acc->fusion();
  TensorView* out = new_tensor_like_axes(fusion, acc->logical(), acc->dtype());
  require_same_extent(index->logical()[0]->logical_extent(), value->logical()[0]->logical_extent(),
      out, "index_put_accumulate", "index and value differ in their number of rows");
  for (int64_t i = 1; i < acc->rank(); ++i) {
    require_same_extent(acc->logical()[i]->logical_extent(), value->logical()[i]->logical_extent(),
        out, "index_put_accumulate", "value and acc differ in size at axis " + std::to_string(i));
  }
  fusion->create<IndexPutAccumulateOp>(ExprFields{{acc, index, value}, {out}, {}});
  return out;
}

TensorView* embedding_fwd(TensorView* indices, TensorView* weight) {
  check_index_tensor(indices, "embedding_fwd");
  NVFUSE_CHECK(weight->rank() == 2,
      "embedding_fwd: weight must be 2-D "
      "(num_embeddings, embedding_dim), got rank ",
      weight->rank());
  Fusion* fusion = indices->fusion();
  std::vector<IterDomain*> axes = indices->logical();
  axes.push_back(weight->logical()[1]);
  TensorView* out = new_tensor_like_axes(fusion, axes, weight->dtype());
  fusion->create<EmbeddingFwdOp>(ExprFields{{indices, weight}, {out}, {}});
  return out;
}

TensorView* triu(TensorView* in, Scalar* diagonal) {
  NVFUSE_CHECK(in->rank() >= 2, "triu: the input needs at least 2 axes, got rank ", in->rank());
  NVFUSE_TYPE_CHECK(
      is_integral(diagonal->dtype()), "triu: diagonal must be an integer, got ", diagonal->dtype());
  Fusion* fusion = in->fusion();
  TensorView* out = new_tensor_like_axes(fusion, in->logical(), in->dtype());
  fusion->create<TriuOp>(ExprFields{{in, diagonal}, {out}, {}});
  return out;
}

TensorView* cumsum(TensorView* in, int64_t dim) {
  const int64_t axis = normalize_axis(dim, std::max<int64_t>(in->rank(), 1), "cumsum");
  const DataType dtype =
      is_integral(in->dtype()) || is_boolean(in->dtype()) ? DataType::Int : in->dtype();
  Fusion* fusion = in->fusion();
  TensorView* out = new_tensor_like_axes(fusion, in->logical(), dtype);
  if (in->rank() > 0 && in->logical()[axis]->is_expanded()) {
    // The sums grow along an expanded (stride-0, constant) axis: the
    // result varies there, an ordinary axis of the expanded size.
    std::vector<IterDomain*> axes = out->logical();
    axes[axis] =
        fusion->create<IterDomain>(in->logical()[axis]->logical_extent(), IterType::kIteration);
    out = fusion->create<TensorView>(TensorDomain(std::move(axes)), dtype);
  }
  fusion->create<CumsumOp>(ExprFields{{in}, {out}, {{"dim", axis}}});
  return out;
}

}  // namespace nvfuse
