// The builder of one record's IR (replay_record): argument accessors that
// check kinds and name the offending state, and one method per group of
// record kinds, defined in replay*.cpp.
#pragma once

#include "frontend/recording_state.h"

namespace nvfuse {

class Replayer {
 public:
  Replayer(const Record& record, const std::vector<StateValue>& states, Fusion& fusion)
      : record_(record), states_(states), fusion_(fusion) {}

  std::vector<StateValue> run();

 private:
  const StateValue& state(const StateRef& ref) const {
    NVFUSE_TYPE_CHECK(ref.index >= 0 && ref.index < static_cast<int64_t>(states_.size()),
        ref.name(), " is not defined in this FusionDefinition");
    return states_[ref.index];
  }
  // The record's optional "dtype" keyword (Null when absent).
  DataType optional_dtype() const {
    const ArgValue* dtype = record_.find("dtype");
    return dtype == nullptr ? DataType::Null : std::get<DataType>(*dtype);
  }
  TensorView* tensor(const ArgValue& arg, const char* what) const {
    const StateRef& ref = std::get<StateRef>(arg);
    const auto* tv = std::get_if<TensorView*>(&state(ref));
    NVFUSE_TYPE_CHECK(tv != nullptr, what, " must be a tensor, got ", ref.name());
    return *tv;
  }
  Val* tensor_or_scalar(const ArgValue& arg) const {
    const StateRef& ref = std::get<StateRef>(arg);
    const StateValue& value = state(ref);
    if (const auto* tv = std::get_if<TensorView*>(&value)) {
      return *tv;
    }
    const auto* s = std::get_if<Scalar*>(&value);
    NVFUSE_TYPE_CHECK(
        s != nullptr, "operands must be tensors or scalars, got the vector ", ref.name());
    return *s;
  }
  Scalar* scalar(const StateRef& ref) const {
    const auto* s = std::get_if<Scalar*>(&state(ref));
    NVFUSE_TYPE_CHECK(s != nullptr, ref.name(), " must be a scalar");
    return *s;
  }
  std::vector<Scalar*> shape(const ArgValue& arg) const;
  // A scalar state, or an integer literal (an Index constant).
  Scalar* scalar_operand(const ArgValue& arg, const char* what) const;
  // The keyword's value, or nullptr when it is absent or None.
  const ArgValue* optional_arg(const std::string& keyword) const;
  // The keyword's scalar (or integer literal), or nullptr when it is
  // absent or None.
  Scalar* optional_scalar(const std::string& keyword, const char* what) const;
  std::vector<TensorView*> tensors(const ArgValue& arg, const char* what) const;

  // One method per group of record kinds (replay_tensor_ops.cpp).
  std::vector<StateValue> shape_op();
  std::vector<StateValue> indexing_op();
  std::vector<StateValue> creation_op();
  std::vector<StateValue> matmul_op();
  std::vector<StateValue> attention_op();
  std::vector<StateValue> sort_op();
  // Size queries and layouts (replay_metadata_ops.cpp).
  std::vector<StateValue> metadata_op();
  // The multi-device annotations (replay_schedule_ops.cpp).
  std::vector<StateValue> schedule_op();

  std::vector<StateValue> define_tensor();
  std::vector<StateValue> define_scalar();
  std::vector<StateValue> add_output();
  void add_output_entry(TensorView* out, TensorView* alias_target);

  const Record& record_;
  const std::vector<StateValue>& states_;
  Fusion& fusion_;
};

}  // namespace nvfuse
