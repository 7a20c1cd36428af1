// replay_record: builds the IR of one definition record. This is where
// define_tensor's shape/contiguity/stride_order become a TensorDomain with a
// (permuted) allocation domain.
#include <numeric>

#include "frontend/replayer.h"
#include "ir/axes.h"
#include "ops/broadcast.h"
#include "ops/pointwise.h"
#include "ops/reduction.h"

namespace nvfuse {

std::vector<Scalar*> Replayer::shape(const ArgValue& arg) const {
  if (const auto* literal = std::get_if<std::vector<int64_t>>(&arg)) {
    std::vector<Scalar*> sizes;
    for (int64_t size : *literal) {
      sizes.push_back(fusion_.index_constant(size));
    }
    return sizes;
  }
  if (const auto* refs = std::get_if<std::vector<StateRef>>(&arg)) {
    std::vector<Scalar*> sizes;
    for (const StateRef& ref : *refs) {
      sizes.push_back(scalar(ref));
    }
    return sizes;
  }
  const StateRef& ref = std::get<StateRef>(arg);
  const auto* vector = std::get_if<std::vector<Scalar*>>(&state(ref));
  NVFUSE_TYPE_CHECK(
      vector != nullptr, "shape must be a list of sizes or a vector, got ", ref.name());
  return *vector;
}

std::vector<StateValue> Replayer::define_tensor() {
  const auto& shape = record_.get<std::vector<int64_t>>("shape");
  const auto& contiguity = record_.get<std::vector<std::optional<bool>>>("contiguity");
  const DataType dtype = record_.get<DataType>("dtype");
  const bool is_cpu = record_.get<bool>("is_cpu");
  const int64_t rank = static_cast<int64_t>(shape.size());
  NVFUSE_TYPE_CHECK(dtype != DataType::Null && dtype != DataType::Index, "define_tensor: dtype ",
      dtype, " is not a tensor element type");
  NVFUSE_CHECK(static_cast<int64_t>(contiguity.size()) == rank, "define_tensor: contiguity has ",
      contiguity.size(), " entries but shape has rank ", rank,
      "; give one entry per axis (None for broadcast axes) or a single bool");
  NVFUSE_CHECK(!is_cpu || rank == 0,
      "define_tensor: is_cpu=True is only for 0-d tensors (CPU scalars), but "
      "shape has rank ",
      rank);

  std::vector<int64_t> allocation_order(rank);
  std::iota(allocation_order.begin(), allocation_order.end(), 0);
  if (const ArgValue* order = record_.find("stride_order")) {
    allocation_order = allocation_order_from_stride_order(std::get<std::vector<int64_t>>(*order));
  }
  std::vector<std::optional<bool>> logical_contiguity(rank);
  for (int64_t position = 0; position < rank; ++position) {
    logical_contiguity[allocation_order[position]] = contiguity[position];
  }

  std::vector<IterDomain*> logical;
  for (int64_t axis = 0; axis < rank; ++axis) {
    const int64_t size = shape[axis];
    const std::optional<bool>& contiguous = logical_contiguity[axis];
    NVFUSE_CHECK(size >= -1, "define_tensor: shape[", axis, "] is ", size,
        "; use -1 for a symbolic size, 1 for a broadcast axis, or a size >= 0");
    if (size == 1) {
      NVFUSE_CHECK(!contiguous.has_value(), "define_tensor: axis ", axis,
          " has size 1 (a broadcast axis), so its contiguity must be None",
          record_.find("stride_order") != nullptr
              ? " (contiguity is listed in allocation order, outermost first "
                "by stride_order)"
              : "");
      logical.push_back(fusion_.create<IterDomain>(fusion_.one(), IterType::kBroadcast));
      continue;
    }
    Scalar* extent = size == -1 ? fusion_.create<Scalar>(DataType::Index, std::nullopt)
                                : fusion_.index_constant(size);
    if (!contiguous.has_value()) {
      // None on a non-size-1 axis: an expanded broadcast (stride 0).
      logical.push_back(fusion_.create<IterDomain>(fusion_.one(), IterType::kBroadcast, extent));
    } else {
      logical.push_back(fusion_.create<IterDomain>(extent, IterType::kIteration));
    }
  }
  std::vector<IterDomain*> allocation;
  for (int64_t axis : allocation_order) {
    allocation.push_back(logical[axis]);
  }
  auto* tv = fusion_.create<TensorView>(TensorDomain(logical), dtype, is_cpu);
  tv->set_allocation_domain(allocation, contiguity);
  fusion_.add_input(tv);
  return {tv};
}

std::vector<StateValue> Replayer::define_scalar() {
  const DataType dtype = record_.get<DataType>("dtype");
  const ArgValue* value = record_.find("");
  if (value == nullptr) {
    NVFUSE_TYPE_CHECK(
        dtype != DataType::Null, "define_scalar: a symbolic scalar (no value) needs a dtype");
    auto* s = fusion_.create<Scalar>(dtype, std::nullopt);
    fusion_.add_input(s);
    return {s};
  }
  const auto& v = std::get<ScalarValue>(*value);
  NVFUSE_TYPE_CHECK(!(v.is_complex() && !is_complex(dtype)), "define_scalar: the complex ",
      "value ", v, " cannot have dtype ", dtype);
  NVFUSE_TYPE_CHECK(!(v.is_double() && (is_integral(dtype) || is_boolean(dtype))),
      "define_scalar: the float value ", v, " cannot have dtype ", dtype);
  return {fusion_.constant(v, dtype)};
}

std::vector<StateValue> Replayer::add_output() {
  TensorView* out = tensor(record_.positional(0), "add_output: the output");
  TensorView* target = nullptr;
  if (record_.args.size() > 1 && record_.args[1].keyword.empty()) {
    target = tensor(record_.args[1].value, "add_output: alias_input");
    NVFUSE_CHECK(fusion_.is_input(target), "add_output: alias_input ",
        to_python(record_.args[1].value), " must be a fusion input");
    NVFUSE_CHECK(target != out, "add_output: a tensor cannot be aliased to itself");
    NVFUSE_TYPE_CHECK(target->dtype() == out->dtype(), "add_output: the output has dtype ",
        out->dtype(), " but alias_input has dtype ", target->dtype());
    NVFUSE_CHECK(target->rank() == out->rank(), "add_output: the output has rank ", out->rank(),
        " but alias_input has rank ", target->rank());
    fusion_.alias_output_to_input(out, target);
  }
  if (const ArgValue* order = record_.find("stride_order")) {
    const auto& stride_order = std::get<std::vector<int64_t>>(*order);
    NVFUSE_CHECK(static_cast<int64_t>(stride_order.size()) == out->rank(),
        "add_output: stride_order has ", stride_order.size(), " entries but the output has rank ",
        out->rank());
    NVFUSE_CHECK(
        !fusion_.is_input(out), "add_output: stride_order cannot change the layout of an input");
    NVFUSE_CHECK(!out->domain().has_allocation() || out->stride_order() == stride_order,
        "add_output: this tensor was already given a different stride_order");
    std::vector<IterDomain*> allocation;
    for (int64_t axis : allocation_order_from_stride_order(stride_order)) {
      allocation.push_back(out->logical()[axis]);
    }
    out->set_allocation_domain(allocation, TensorDomain::contiguous_for(allocation));
  }
  add_output_entry(out, target);
  return {};
}

// An output written into an input is not returned; the same tensor also
// added as a plain output (before or after) returns the input it was
// written into, sharing its storage, as the predecessor returned it.
void Replayer::add_output_entry(TensorView* out, TensorView* alias_target) {
  if (alias_target != nullptr) {
    fusion_.redirect_outputs(out, alias_target);
    fusion_.add_output(out);
  } else if (TensorView* written = fusion_.aliased_input(out)) {
    fusion_.add_output(written);
  } else {
    fusion_.add_output(out);
  }
}

std::vector<StateValue> Replayer::run() {
  switch (record_.kind) {
    case RecordKind::DefineTensor:
      return define_tensor();
    case RecordKind::DefineScalar:
      return define_scalar();
    case RecordKind::DefineVector: {
      std::vector<Scalar*> elements;
      for (const StateRef& ref : std::get<std::vector<StateRef>>(record_.positional(0))) {
        Scalar* s = scalar(ref);
        NVFUSE_TYPE_CHECK(is_integral(s->dtype()), "define_vector: ", ref.name(), " has dtype ",
            s->dtype(), "; sizes must be integers");
        elements.push_back(s);
      }
      return {elements};
    }
    case RecordKind::Pointwise: {
      std::vector<Val*> operands;
      for (const RecordArg& arg : record_.args) {
        operands.push_back(tensor_or_scalar(arg.value));
      }
      Val* out = pointwise(record_.op, operands);
      if (out->is<TensorView>()) {
        return {out->as<TensorView>()};
      }
      return {out->as<Scalar>()};
    }
    case RecordKind::Cast: {
      Val* out = cast(tensor_or_scalar(record_.positional(0)), record_.get<DataType>("dtype"));
      if (out->is<TensorView>()) {
        return {out->as<TensorView>()};
      }
      return {out->as<Scalar>()};
    }
    case RecordKind::BroadcastInDim:
      return {broadcast_in_dim(tensor(record_.positional(0), "broadcast_in_dim: the operand"),
          shape(*record_.find("shape")), record_.get<std::vector<int64_t>>("broadcast_dims"))};
    case RecordKind::Broadcast:
      return {broadcast(tensor(record_.positional(0), "broadcast: the operand"),
          record_.get<std::vector<bool>>("is_broadcast_dim"))};
    case RecordKind::Expand:
      return {expand(
          tensor(record_.positional(0), "expand: the operand"), shape(*record_.find("shape")))};
    case RecordKind::Reduction:
      return {reduce(record_.op, tensor(record_.positional(0), "the reduction operand"),
          record_.get<std::vector<int64_t>>("dims"), record_.get<bool>("keepdim"),
          optional_dtype())};
    case RecordKind::VarMean:
    case RecordKind::Var: {
      auto [var, mean] = var_mean(tensor(record_.positional(0), "var_mean: the operand"),
          record_.get<std::vector<int64_t>>("dims"), record_.get<int64_t>("correction"),
          record_.get<bool>("keepdim"));
      if (record_.kind == RecordKind::Var) {
        return {var};
      }
      return {var, mean};
    }
    case RecordKind::Mean:
      return {mean(tensor(record_.positional(0), "mean: the operand"),
          record_.get<std::vector<int64_t>>("dims"), record_.get<bool>("keepdim"),
          optional_dtype())};
    case RecordKind::Welford: {
      auto [avg, var_sum, n] = welford(tensor(record_.positional(0), "welford: the operand"),
          record_.get<std::vector<int64_t>>("dims"));
      return {avg, var_sum, n};
    }
    case RecordKind::Reshape:
    case RecordKind::Permute:
    case RecordKind::Squeeze:
    case RecordKind::Slice:
    case RecordKind::Pad:
    case RecordKind::Cat:
      return shape_op();
    case RecordKind::Select:
    case RecordKind::IndexSelect:
    case RecordKind::Gather:
    case RecordKind::TakeAlongAxis:
    case RecordKind::Scatter:
    case RecordKind::IndexPutAccumulate:
    case RecordKind::EmbeddingFwd:
    case RecordKind::Triu:
    case RecordKind::Cumsum:
      return indexing_op();
    case RecordKind::Full:
    case RecordKind::Iota:
    case RecordKind::Uniform:
    case RecordKind::Normal:
    case RecordKind::RandLike:
    case RecordKind::RandnLike:
      return creation_op();
    case RecordKind::Matmul:
    case RecordKind::Linear:
    case RecordKind::GroupedMm:
      return matmul_op();
    case RecordKind::SdpfaFwd:
    case RecordKind::SdpfaBwd:
      return attention_op();
    case RecordKind::Topk:
    case RecordKind::Argsort:
      return sort_op();
    case RecordKind::Size:
    case RecordKind::Shape:
    case RecordKind::At:
    case RecordKind::StrideOrder:
      return metadata_op();
    case RecordKind::AddOutput:
      return add_output();
    case RecordKind::SetDeviceMesh:
    case RecordKind::SplitAxis:
    case RecordKind::ParallelizeAxis:
      return schedule_op();
  }
  NVFUSE_ASSERT(false, "unknown record kind");
  return {};
}

std::vector<StateValue> replay_record(
    const Record& record, const std::vector<StateValue>& states, Fusion& fusion) {
  return Replayer(record, states, fusion).run();
}

}  // namespace nvfuse
