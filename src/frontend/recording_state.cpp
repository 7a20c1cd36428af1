#include "frontend/recording_state.h"

#include <numeric>

#include "ir/axes.h"
#include "ir/tensor_domain.h"

namespace nvfuse {

namespace {

std::vector<RecordArg> operand_args(const std::vector<StateRef>& operands) {
  std::vector<RecordArg> args;
  for (const StateRef& ref : operands) {
    args.push_back({"", ref});
  }
  return args;
}

ArgValue shape_arg(const ShapeArg& shape) {
  if (std::holds_alternative<StateRef>(shape)) {
    return std::get<StateRef>(shape);
  }
  return std::get<std::vector<int64_t>>(shape);
}

bool is_identity(const std::vector<int64_t>& order) {
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i] != static_cast<int64_t>(order.size() - 1 - i)) {
      return false;
    }
  }
  return true;
}

// One contiguity entry per axis in allocation order: None where the axis is
// a size-1 broadcast, `contiguous` elsewhere.
std::vector<std::optional<bool>> expand_contiguity(
    bool contiguous, const std::vector<int64_t>& shape, const std::vector<int64_t>& stride_order) {
  std::vector<int64_t> order(shape.size());
  std::iota(order.begin(), order.end(), 0);
  if (!stride_order.empty()) {
    order = allocation_order_from_stride_order(stride_order);
  }
  std::vector<std::optional<bool>> contiguity;
  for (int64_t axis : order) {
    contiguity.push_back(shape[axis] == 1 ? std::nullopt : std::optional<bool>(contiguous));
  }
  return contiguity;
}

}  // namespace

RecordingState::RecordingState() : fusion_(std::make_unique<Fusion>()) {}

std::vector<StateRef> RecordingState::commit(Record record) {
  NVFUSE_CHECK(
      fusion_ != nullptr, "this FusionDefinition is finalized; start a new one to define more");
  std::vector<StateValue> produced;
  try {
    produced = replay_record(record, values_, *fusion_);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kInternal) {
      throw;
    }
    throw Error(e.kind(), "In " + record.to_python() + ": " + e.what());
  }
  for (const StateValue& value : produced) {
    StateKind kind = std::holds_alternative<TensorView*>(value) ? StateKind::kTensor
        : std::holds_alternative<Scalar*>(value)                ? StateKind::kScalar
                                                                : StateKind::kVector;
    record.outputs.push_back({kind, static_cast<int64_t>(values_.size())});
    values_.push_back(value);
  }
  records_.push_back(std::move(record));
  return records_.back().outputs;
}

StateRef RecordingState::define_tensor(const std::vector<int64_t>& shape,
    const ContiguityArg& contiguity_arg, DataType dtype, bool is_cpu,
    std::vector<int64_t> stride_order) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  NVFUSE_CHECK(stride_order.empty() || static_cast<int64_t>(stride_order.size()) == rank,
      "define_tensor: stride_order has ", stride_order.size(), " entries but shape has rank ",
      rank);
  NVFUSE_CHECK(is_permutation(stride_order), "define_tensor: stride_order ",
      to_python(stride_order), " must hold each of 0..rank-1 exactly once (0 = fastest axis)");
  if (is_identity(stride_order)) {
    stride_order.clear();  // row-major: the canonical spelling
  }
  std::vector<std::optional<bool>> contiguity;
  if (std::holds_alternative<bool>(contiguity_arg)) {
    contiguity = expand_contiguity(std::get<bool>(contiguity_arg), shape, stride_order);
  } else {
    contiguity = std::get<std::vector<std::optional<bool>>>(contiguity_arg);
  }
  Record record{RecordKind::DefineTensor};
  record.args = {
      {"shape", shape}, {"contiguity", contiguity}, {"dtype", dtype}, {"is_cpu", is_cpu}};
  if (!stride_order.empty()) {
    record.args.push_back({"stride_order", stride_order});
  }
  return commit(std::move(record)).front();
}

StateRef RecordingState::define_scalar(std::optional<ScalarValue> value, DataType dtype) {
  Record record{RecordKind::DefineScalar};
  if (value.has_value()) {
    if (dtype == DataType::Null) {
      dtype = value->natural_dtype();
    }
    record.args.push_back({"", *value});
  }
  record.args.push_back({"dtype", dtype});
  return commit(std::move(record)).front();
}

StateRef RecordingState::define_vector(std::vector<StateRef> elements) {
  Record record{RecordKind::DefineVector};
  record.args = {{"", std::move(elements)}, {"dtype", DataType::Int}};
  return commit(std::move(record)).front();
}

StateRef RecordingState::pointwise(OpType op, std::vector<StateRef> operands) {
  Record record{RecordKind::Pointwise, op, operand_args(operands)};
  return commit(std::move(record)).front();
}

StateRef RecordingState::cast(StateRef operand, DataType dtype) {
  Record record{RecordKind::Cast};
  record.args = {{"", operand}, {"dtype", dtype}};
  return commit(std::move(record)).front();
}

StateRef RecordingState::broadcast_in_dim(
    StateRef operand, ShapeArg shape, std::vector<int64_t> broadcast_dims) {
  Record record{RecordKind::BroadcastInDim};
  record.args = {
      {"", operand}, {"shape", shape_arg(shape)}, {"broadcast_dims", std::move(broadcast_dims)}};
  return commit(std::move(record)).front();
}

StateRef RecordingState::broadcast(StateRef operand, std::vector<bool> is_broadcast_dim) {
  Record record{RecordKind::Broadcast};
  record.args = {{"", operand}, {"is_broadcast_dim", is_broadcast_dim}};
  return commit(std::move(record)).front();
}

StateRef RecordingState::expand(StateRef operand, ShapeArg shape) {
  Record record{RecordKind::Expand};
  record.args = {{"", operand}, {"shape", shape_arg(shape)}};
  return commit(std::move(record)).front();
}

namespace {

// sum/prod/max/min and mean: (operand, dims, keepdim[, dtype]).
Record reduction_record(RecordKind kind, OpType op, StateRef operand, std::vector<int64_t> dims,
    bool keepdim, DataType dtype) {
  Record record{kind, op};
  record.args = {{"", operand}, {"dims", std::move(dims)}, {"keepdim", keepdim}};
  if (dtype != DataType::Null) {
    record.args.push_back({"dtype", dtype});
  }
  return record;
}

}  // namespace

StateRef RecordingState::reduction(
    OpType op, StateRef operand, std::vector<int64_t> dims, bool keepdim, DataType dtype) {
  return commit(
      reduction_record(RecordKind::Reduction, op, operand, std::move(dims), keepdim, dtype))
      .front();
}

std::pair<StateRef, StateRef> RecordingState::var_mean(
    StateRef operand, std::vector<int64_t> dims, int64_t correction, bool keepdim) {
  Record record{RecordKind::VarMean};
  record.args = {
      {"", operand}, {"dims", std::move(dims)}, {"correction", correction}, {"keepdim", keepdim}};
  auto outputs = commit(std::move(record));
  return {outputs.at(0), outputs.at(1)};
}

StateRef RecordingState::mean(
    StateRef operand, std::vector<int64_t> dims, bool keepdim, DataType dtype) {
  return commit(
      reduction_record(RecordKind::Mean, OpType::set, operand, std::move(dims), keepdim, dtype))
      .front();
}

std::vector<StateRef> RecordingState::welford(StateRef operand, std::vector<int64_t> dims) {
  Record record{RecordKind::Welford};
  record.args = {{"", operand}, {"dims", std::move(dims)}};
  return commit(std::move(record));
}

StateRef RecordingState::var(
    StateRef operand, std::vector<int64_t> dims, int64_t correction, bool keepdim) {
  Record record{RecordKind::Var};
  record.args = {
      {"", operand}, {"dims", std::move(dims)}, {"correction", correction}, {"keepdim", keepdim}};
  return commit(std::move(record)).front();
}

std::vector<StateRef> RecordingState::record_op(RecordKind kind, std::vector<RecordArg> args) {
  Record record{kind};
  record.args = std::move(args);
  return commit(std::move(record));
}

void RecordingState::add_output(
    StateRef output, std::optional<StateRef> alias_input, std::vector<int64_t> stride_order) {
  Record record{RecordKind::AddOutput};
  record.args = {{"", output}};
  if (alias_input.has_value()) {
    record.args.push_back({"", *alias_input});
  }
  if (!stride_order.empty()) {
    record.args.push_back({"stride_order", std::move(stride_order)});
  }
  commit(std::move(record));
}

int64_t RecordingState::vector_length(StateRef vector) const {
  NVFUSE_ASSERT(vector.index >= 0 && vector.index < static_cast<int64_t>(values_.size()),
      "unknown state ", vector.name());
  const auto* elements = std::get_if<std::vector<Scalar*>>(&values_[vector.index]);
  NVFUSE_ASSERT(elements != nullptr, vector.name(), " is not a vector");
  return static_cast<int64_t>(elements->size());
}

int64_t RecordingState::rank_of(StateRef tensor) const {
  NVFUSE_ASSERT(tensor.index >= 0 && tensor.index < static_cast<int64_t>(values_.size()),
      "unknown state ", tensor.name());
  const auto* tv = std::get_if<TensorView*>(&values_[tensor.index]);
  NVFUSE_ASSERT(tv != nullptr, tensor.name(), " is not a tensor");
  return (*tv)->rank();
}

DataType RecordingState::dtype_of(StateRef state) const {
  NVFUSE_ASSERT(state.index >= 0 && state.index < static_cast<int64_t>(values_.size()),
      "unknown state ", state.name());
  const StateValue& value = values_[state.index];
  if (const auto* tv = std::get_if<TensorView*>(&value)) {
    return (*tv)->dtype();
  }
  if (const auto* s = std::get_if<Scalar*>(&value)) {
    return (*s)->dtype();
  }
  return DataType::Int;
}

size_t RecordingState::hash() const {
  size_t h = records_.size();
  for (const Record& record : records_) {
    h = h * 1000003 ^ record.hash();
  }
  return h;
}

}  // namespace nvfuse
