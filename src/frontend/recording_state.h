// The C++ side of a FusionDefinition while it is being written: the records
// so far, and the Fusion IR they build. Every call is validated by building
// its IR at once, so a bad call fails where it is made and leaves the state
// as it was.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "frontend/record.h"
#include "ir/fusion.h"

namespace nvfuse {

// The IR a state stands for.
using StateValue = std::variant<TensorView*, Scalar*, std::vector<Scalar*>>;

// A shape argument: a vector state (V) or literal sizes.
using ShapeArg = std::variant<StateRef, std::vector<int64_t>>;

// Contiguity as given by the user: one bool for every axis, or one entry per
// axis in allocation order (None for broadcast axes).
using ContiguityArg = std::variant<bool, std::vector<std::optional<bool>>>;

class RecordingState {
 public:
  RecordingState();

  // shape: -1 symbolic, 1 broadcast, n constant; -1 with contiguity None is
  // an expanded broadcast (stride 0). stride_order: empty for row-major.
  StateRef define_tensor(const std::vector<int64_t>& shape, const ContiguityArg& contiguity,
      DataType dtype, bool is_cpu, std::vector<int64_t> stride_order);
  // A constant when `value` is set, else a symbolic input. A Null dtype
  // takes the value's natural type.
  StateRef define_scalar(std::optional<ScalarValue> value, DataType dtype);
  StateRef define_vector(std::vector<StateRef> elements);

  StateRef pointwise(OpType op, std::vector<StateRef> operands);
  StateRef cast(StateRef operand, DataType dtype);
  StateRef broadcast_in_dim(StateRef operand, ShapeArg shape, std::vector<int64_t> broadcast_dims);
  StateRef broadcast(StateRef operand, std::vector<bool> is_broadcast_dim);
  StateRef expand(StateRef operand, ShapeArg shape);
  StateRef reduction(
      OpType op, StateRef operand, std::vector<int64_t> dims, bool keepdim, DataType dtype);
  std::pair<StateRef, StateRef> var_mean(
      StateRef operand, std::vector<int64_t> dims, int64_t correction, bool keepdim);
  StateRef var(StateRef operand, std::vector<int64_t> dims, int64_t correction, bool keepdim);
  StateRef mean(StateRef operand, std::vector<int64_t> dims, bool keepdim, DataType dtype);
  // (avg, var_sum, n)
  std::vector<StateRef> welford(StateRef operand, std::vector<int64_t> dims);
  // A record of `kind` with `args` as given (the shape, indexing, creation
  // and matmul ops, whose Python wrappers spell out their arguments).
  std::vector<StateRef> record_op(RecordKind kind, std::vector<RecordArg> args);
  void add_output(
      StateRef output, std::optional<StateRef> alias_input, std::vector<int64_t> stride_order);

  // For Python handles.
  int64_t rank_of(StateRef tensor) const;
  int64_t vector_length(StateRef vector) const;
  DataType dtype_of(StateRef state) const;

  const std::vector<Record>& records() const { return records_; }
  size_t hash() const;
  bool same_records(const RecordingState& other) const { return records_ == other.records_; }
  const Fusion& fusion() const { return *fusion_; }
  std::unique_ptr<Fusion> release_fusion() { return std::move(fusion_); }
  // The IR of each state (T0, S1...), in the released fusion.
  const std::vector<StateValue>& states() const { return values_; }

 private:
  std::vector<StateRef> commit(Record record);

  std::vector<Record> records_;
  std::vector<StateValue> values_;
  std::unique_ptr<Fusion> fusion_;
};

// Builds the IR of one record into `fusion`; returns the values it defines.
std::vector<StateValue> replay_record(
    const Record& record, const std::vector<StateValue>& states, Fusion& fusion);

// The definition as a Python function:
//   def <function_name>(fd : FusionDefinition) -> None :
//       T0 = fd.define_tensor(...)
std::string python_definition(const std::vector<Record>& records, const std::string& function_name);

// A runnable script: imports, the definition, and a `with` block building it.
std::string repro_script(const std::vector<Record>& records, const std::string& function_name);

}  // namespace nvfuse
