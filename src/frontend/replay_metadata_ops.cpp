// replay_record for the size queries (fd.ops.size, fd.ops.shape,
// fd.ops.at) and fd.ops.stride_order. A size is the axis's own extent
// scalar, not a new value: a shape built from it names the same extent, so
// the runtime binds it from the input tensor like any other symbolic size.
#include "frontend/replayer.h"
#include "ir/axes.h"
#include "ops/creation.h"
#include "ops/pointwise.h"

namespace nvfuse {

namespace {

// A copy of `in` whose allocation domain follows `stride_order` (stride
// rank of each logical axis, 0 the fastest).
TensorView* with_stride_order(TensorView* in, const std::vector<int64_t>& stride_order) {
  NVFUSE_CHECK(static_cast<int64_t>(stride_order.size()) == in->rank(),
      "stride_order: ", stride_order.size(), " entries for a tensor of rank ", in->rank());
  NVFUSE_CHECK(is_permutation(stride_order), "stride_order: expected a permutation of 0..",
      in->rank() - 1, ", got ", to_python(ArgValue(stride_order)));
  TensorView* out = pointwise(OpType::set, {in})->as<TensorView>();
  std::vector<IterDomain*> allocation;
  for (int64_t axis : allocation_order_from_stride_order(stride_order)) {
    allocation.push_back(out->logical()[axis]);
  }
  out->set_allocation_domain(allocation, TensorDomain::contiguous_for(allocation));
  return out;
}

}  // namespace

std::vector<StateValue> Replayer::metadata_op() {
  switch (record_.kind) {
    case RecordKind::Size: {
      TensorView* in = tensor(record_.positional(0), "size: the operand");
      const int64_t dim = normalize_axis(record_.get<int64_t>("dim"), in->rank(), "fd.ops.size");
      return {in->logical()[dim]->logical_extent()};
    }
    case RecordKind::Shape:
      return {shape_of(tensor(record_.positional(0), "shape: the operand"))};
    case RecordKind::At: {
      const StateRef& ref = std::get<StateRef>(record_.positional(0));
      const auto* elements = std::get_if<std::vector<Scalar*>>(&state(ref));
      NVFUSE_TYPE_CHECK(elements != nullptr, "at: the operand must be a vector, got ", ref.name());
      const int64_t index = normalize_axis(
          record_.get<int64_t>("index"), static_cast<int64_t>(elements->size()), "fd.ops.at");
      return {(*elements)[index]};
    }
    case RecordKind::StrideOrder:
      return {with_stride_order(tensor(record_.positional(0), "stride_order: the operand"),
          record_.get<std::vector<int64_t>>("stride_order"))};
    default:
      NVFUSE_ASSERT(false, "not a metadata record");
      return {};
  }
}

}  // namespace nvfuse
