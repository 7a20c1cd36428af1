// A record is one call of the Python definition API, as plain data: the
// method, its positional and keyword arguments, and the states it defines.
// Records hash and compare structurally, and print back as the Python call
// (`T2 = fd.ops.add(T0, T1)`), which is what the repro script is made of.
#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ir/data_type.h"
#include "ir/op_table.h"
#include "ir/scalar_value.h"

namespace nvfuse {

// What a definition-level value is: T (tensor), S (scalar) or V (vector).
enum class StateKind { kTensor, kScalar, kVector };

// A value of the definition, numbered in definition order across kinds, as
// the Python names T0, T1, S2, V3 are.
struct StateRef {
  StateKind kind;
  int64_t index;
  bool operator==(const StateRef& other) const {
    return kind == other.kind && index == other.index;
  }
  std::string name() const;  // "T0", "S2", "V3"
};

using ArgValue = std::variant<
    std::monostate,  // Python None
    StateRef,
    std::vector<StateRef>,
    bool,
    int64_t,
    ScalarValue,
    DataType,
    std::vector<int64_t>,
    std::vector<std::optional<bool>>,
    std::vector<bool>>;

struct RecordArg {
  std::string keyword;  // empty for a positional argument
  ArgValue value;
  bool operator==(const RecordArg& other) const {
    return keyword == other.keyword && value == other.value;
  }
};

// X(kind): one per definition API call. A kind's Python method is given by
// method_of(); its IR is built by replay_record().
#define NVFUSE_RECORD_KINDS(X) \
  X(DefineTensor)              \
  X(DefineScalar)              \
  X(DefineVector)              \
  X(Pointwise)                 \
  X(Cast)                      \
  X(BroadcastInDim)            \
  X(Broadcast)                 \
  X(Expand)                    \
  X(Reduction)                 \
  X(VarMean)                   \
  X(Var)                       \
  X(Mean)                      \
  X(Welford)                   \
  X(AddOutput)

enum class RecordKind {
#define NVFUSE_RECORD_KIND_ENUM(kind) kind,
  NVFUSE_RECORD_KINDS(NVFUSE_RECORD_KIND_ENUM)
#undef NVFUSE_RECORD_KIND_ENUM
};

struct Record {
  RecordKind kind;
  OpType op = OpType::set;  // Pointwise and Reduction only
  std::vector<RecordArg> args;
  std::vector<StateRef> outputs;

  // The Python callee: "fd.define_tensor", "fd.ops.add", "fd.ops.sum".
  std::string method() const;
  // One line of the repro script: `T2 = fd.ops.add(T0, T1)`.
  std::string to_python() const;

  const ArgValue* find(const std::string& keyword) const;
  const ArgValue& positional(size_t index) const;
  template <typename T>
  const T& get(const std::string& keyword) const {
    return std::get<T>(*find_or_throw(keyword));
  }

  bool operator==(const Record& other) const {
    return kind == other.kind && op == other.op && args == other.args &&
        outputs == other.outputs;
  }
  size_t hash() const;

 private:
  const ArgValue* find_or_throw(const std::string& keyword) const;
};

std::string to_python(const ArgValue& value);

}  // namespace nvfuse
