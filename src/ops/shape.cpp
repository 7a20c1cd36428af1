#include "ops/shape.h"

#include <algorithm>

#include "ir/axes.h"
#include "ir/extent_arith.h"
#include "ir/fusion.h"
#include "ir/shape_exprs.h"
#include "ops/new_axes.h"
#include "ops/pointwise.h"

namespace nvfuse {

namespace {

Scalar* element_count(const std::vector<IterDomain*>& axes, Fusion* fusion) {
  Scalar* count = fusion->one();
  for (const IterDomain* id : axes) {
    count = extent_mul(count, id->logical_extent());
  }
  return count;
}

void check_size_operand(const Scalar* size, const char* op, const char* what, size_t i) {
  NVFUSE_TYPE_CHECK(is_integral(size->dtype()), op, ": ", what, "[", i,
      "] must be an integer, got ", size->dtype());
}

}  // namespace

TensorView* reshape(TensorView* in, const std::vector<Scalar*>& shape) {
  Fusion* fusion = in->fusion();
  int64_t inferred = -1;
  Scalar* known = fusion->one();
  for (size_t i = 0; i < shape.size(); ++i) {
    check_size_operand(shape[i], "reshape", "new_shape", i);
    if (shape[i]->is_constant_int(-1)) {
      NVFUSE_CHECK(inferred < 0, "reshape: new_shape has -1 at both ", inferred, " and ", i,
          "; at most one size can be inferred");
      inferred = static_cast<int64_t>(i);
      continue;
    }
    if (auto size = shape[i]->constant_int()) {
      NVFUSE_CHECK(*size >= 0, "reshape: new_shape[", i, "] is ", *size,
          "; sizes are >= 0, or -1 for the one inferred size");
    }
    known = extent_mul(known, shape[i]);
  }
  Scalar* count = element_count(in->logical(), fusion);
  std::vector<Scalar*> sizes = shape;
  if (inferred >= 0) {
    NVFUSE_CHECK(!known->is_constant_int(0),
        "reshape: cannot infer the -1 size when the other sizes multiply to 0");
    sizes[inferred] = extent_div(count, known);
  }
  Scalar* new_count = inferred >= 0 ? extent_mul(known, sizes[inferred]) : known;
  if (count->constant_int() && new_count->constant_int()) {
    NVFUSE_CHECK(*count->constant_int() == *new_count->constant_int(), "reshape: the input has ",
        *count->constant_int(), " elements but new_shape holds ", *new_count->constant_int());
  }
  std::vector<IterDomain*> axes;
  for (Scalar* size : sizes) {
    axes.push_back(axis_of_extent(fusion, size));
  }
  TensorView* out = tensor_of_axes(fusion, std::move(axes), in->dtype());
  std::vector<Val*> inputs = {in};
  inputs.insert(inputs.end(), sizes.begin(), sizes.end());
  fusion->create<ReshapeOp>(ExprFields{std::move(inputs), {out}, {}});
  if (!(count->constant_int() && new_count->constant_int())) {
    fusion->add_extent_equality(count, new_count, out);
  }
  return out;
}

TensorView* permute(TensorView* in, const std::vector<int64_t>& dims) {
  NVFUSE_CHECK(static_cast<int64_t>(dims.size()) == in->rank(), "permute: dims has ", dims.size(),
      " entries but the input has rank ", in->rank());
  std::vector<int64_t> normalized;
  for (int64_t d : dims) {
    normalized.push_back(normalize_axis(d, in->rank(), "permute"));
  }
  NVFUSE_CHECK(is_permutation(normalized), "permute: dims must name each axis exactly once");
  Fusion* fusion = in->fusion();
  std::vector<IterDomain*> axes;
  for (int64_t d : normalized) {
    axes.push_back(copy_axis(fusion, in->logical()[d]));
  }
  TensorView* out = tensor_of_axes(fusion, std::move(axes), in->dtype());
  fusion->create<PermuteOp>(ExprFields{{in}, {out}, {{"dims", normalized}}});
  return out;
}

TensorView* squeeze(TensorView* in, const std::vector<int64_t>& dims) {
  std::vector<int64_t> axes_to_drop = normalize_axes(dims, in->rank(), "squeeze");
  Fusion* fusion = in->fusion();
  std::vector<IterDomain*> axes;
  std::vector<Scalar*> symbolic_dropped;
  for (int64_t i = 0; i < in->rank(); ++i) {
    IterDomain* id = in->logical()[i];
    if (!std::binary_search(axes_to_drop.begin(), axes_to_drop.end(), i)) {
      axes.push_back(copy_axis(fusion, id));
      continue;
    }
    const auto size = id->logical_extent()->constant_int();
    NVFUSE_CHECK(!id->is_expanded() && (!size.has_value() || *size == 1), "squeeze: axis ", i,
        " has size ", id->logical_extent()->to_string(), "; only size-1 axes can be squeezed");
    if (!size.has_value()) {
      symbolic_dropped.push_back(id->logical_extent());
    }
  }
  TensorView* out = tensor_of_axes(fusion, std::move(axes), in->dtype());
  fusion->create<SqueezeOp>(ExprFields{{in}, {out}, {{"dims", axes_to_drop}}});
  // Recorded against the squeeze's own output: the binder reads the op
  // that required the equality from it (a reshape's input would be taken
  // for the reshape's element-count check).
  for (Scalar* extent : symbolic_dropped) {
    fusion->add_extent_equality(extent, fusion->one(), out);
  }
  return out;
}

TensorView* slice(TensorView* in, const std::vector<Scalar*>& starts,
    const std::vector<Scalar*>& ends, const std::vector<Scalar*>& steps) {
  const size_t rank = static_cast<size_t>(in->rank());
  NVFUSE_CHECK(starts.size() == rank && ends.size() == rank && steps.size() == rank,
      "slice: start_indices, end_indices and strides need one entry per axis "
      "(rank ",
      rank, "), got ", starts.size(), ", ", ends.size(), " and ", steps.size());
  Fusion* fusion = in->fusion();
  std::vector<Val*> inputs = {in};
  std::vector<IterDomain*> axes;
  for (size_t i = 0; i < rank; ++i) {
    check_size_operand(starts[i], "slice", "start_indices", i);
    check_size_operand(ends[i], "slice", "end_indices", i);
    check_size_operand(steps[i], "slice", "strides", i);
    auto step = steps[i]->constant_int();
    NVFUSE_CHECK(step.has_value() && *step > 0, "slice: strides[", i,
        "] must be a positive constant, got ", steps[i]->to_string());
    IterDomain* id = in->logical()[i];
    Scalar* extent = id->logical_extent();
    Scalar* start = normalized_index(starts[i], extent);
    Scalar* end = extent_max(normalized_index(ends[i], extent), start);
    Scalar* length = extent_ceil_div(extent_sub(end, start), steps[i]);
    const bool whole_axis = starts[i]->is_constant_int(0) && *step == 1 && length == extent;
    axes.push_back(whole_axis ? copy_axis(fusion, id) : axis_of_extent(fusion, length));
    inputs.insert(inputs.end(), {starts[i], ends[i], steps[i]});
  }
  TensorView* out = tensor_of_axes(fusion, std::move(axes), in->dtype());
  fusion->create<SliceOp>(ExprFields{std::move(inputs), {out}, {}});
  return out;
}

TensorView* pad(TensorView* in, const std::vector<Scalar*>& widths, Scalar* value) {
  const int64_t rank = in->rank();
  NVFUSE_CHECK(widths.size() % 2 == 0 && static_cast<int64_t>(widths.size()) <= 2 * rank,
      "pad: pad_widths must hold (before, after) pairs for at most ", rank,
      " axes (the last axis first), got ", widths.size(), " entries");
  Fusion* fusion = in->fusion();
  Scalar* zero = fusion->index_constant(0);
  std::vector<Scalar*> before(rank, zero);
  std::vector<Scalar*> after(rank, zero);
  for (size_t pair = 0; pair < widths.size() / 2; ++pair) {
    check_size_operand(widths[2 * pair], "pad", "pad_widths", 2 * pair);
    check_size_operand(widths[2 * pair + 1], "pad", "pad_widths", 2 * pair + 1);
    const int64_t axis = rank - 1 - static_cast<int64_t>(pair);
    before[axis] = widths[2 * pair];
    after[axis] = widths[2 * pair + 1];
  }
  std::vector<Val*> inputs = {in, value};
  std::vector<IterDomain*> axes;
  for (int64_t i = 0; i < rank; ++i) {
    IterDomain* id = in->logical()[i];
    if (before[i]->is_constant_int(0) && after[i]->is_constant_int(0)) {
      axes.push_back(copy_axis(fusion, id));
    } else {
      Scalar* extent = extent_add(extent_add(id->logical_extent(), before[i]), after[i]);
      if (auto size = extent->constant_int()) {
        NVFUSE_CHECK(*size >= 0, "pad: axis ", i, " would have the negative size ", *size);
      }
      axes.push_back(axis_of_extent(fusion, extent));
    }
    inputs.insert(inputs.end(), {before[i], after[i]});
  }
  TensorView* out = tensor_of_axes(fusion, std::move(axes), in->dtype());
  fusion->create<PadOp>(ExprFields{std::move(inputs), {out}, {}});
  return out;
}

namespace {

// torch.cat's operands in their promoted dtype (torch.cat promotes).
std::vector<TensorView*> in_common_dtype(std::vector<TensorView*> inputs) {
  DataType common = inputs.front()->dtype();
  for (const TensorView* tv : inputs) {
    common = promote_types(common, tv->dtype());
  }
  for (TensorView*& tv : inputs) {
    if (tv->dtype() != common) {
      tv = cast(tv, common)->as<TensorView>();
    }
  }
  return inputs;
}

}  // namespace

namespace {

// The axis a concatenation's output takes from its operands at a non-cat
// axis: an iterating one where any operand iterates there, else an
// expanded one, else the first operand's broadcast. An operand that is an
// expanded broadcast (a class token expanded over the batch) must not make
// the whole output a stride-0 broadcast.
const IterDomain* cat_axis_source(const std::vector<TensorView*>& inputs, int64_t axis) {
  const IterDomain* expanded = nullptr;
  for (const TensorView* tv : inputs) {
    const IterDomain* id = tv->logical()[axis];
    if (!id->is_broadcast()) {
      return id;
    }
    if (expanded == nullptr && id->is_expanded()) {
      expanded = id;
    }
  }
  return expanded != nullptr ? expanded : inputs.front()->logical()[axis];
}

}  // namespace

TensorView* cat(const std::vector<TensorView*>& tensors, int64_t dim) {
  NVFUSE_CHECK(!tensors.empty(), "cat: needs at least one tensor");
  const std::vector<TensorView*> inputs = in_common_dtype(tensors);
  const TensorView* first = inputs.front();
  const int64_t rank = first->rank();
  NVFUSE_CHECK(rank > 0, "cat: 0-d tensors cannot be concatenated");
  const int64_t axis = normalize_axis(dim, rank, "cat");
  Fusion* fusion = first->fusion();
  Scalar* total = fusion->index_constant(0);
  for (size_t t = 0; t < inputs.size(); ++t) {
    const TensorView* tv = inputs[t];
    NVFUSE_CHECK(tv->rank() == rank, "cat: tensor ", t, " has rank ", tv->rank(),
        " but tensor 0 has rank ", rank);
    total = extent_add(total, tv->logical()[axis]->logical_extent());
    for (int64_t i = 0; i < rank; ++i) {
      if (i != axis) {
        require_same_extent(tv->logical()[i]->logical_extent(),
            first->logical()[i]->logical_extent(), inputs[t], "cat",
            "tensor " + std::to_string(t) +
                " and tensor 0 differ in size at "
                "axis " +
                std::to_string(i));
      }
    }
  }
  std::vector<IterDomain*> axes;
  for (int64_t i = 0; i < rank; ++i) {
    axes.push_back(
        i == axis ? axis_of_extent(fusion, total) : copy_axis(fusion, cat_axis_source(inputs, i)));
  }
  TensorView* out = tensor_of_axes(fusion, std::move(axes), first->dtype());
  std::vector<Val*> operands(inputs.begin(), inputs.end());
  fusion->create<CatOp>(ExprFields{std::move(operands), {out}, {{"dim", axis}}});
  return out;
}

}  // namespace nvfuse
