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
#include "ir/device_mesh.h"
#include "ir/parallel_type.h"
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

using ArgValue = std::variant<std::monostate,  // Python None
    StateRef, std::vector<StateRef>, bool, int64_t, ScalarValue, DataType, std::vector<int64_t>,
    std::vector<std::optional<bool>>, std::vector<bool>, DeviceMesh, ParallelType>;

struct RecordArg {
  std::string keyword;  // empty for a positional argument
  ArgValue value;
  bool operator==(const RecordArg& other) const {
    return keyword == other.keyword && value == other.value;
  }
};

// X(kind, method): one per definition API call and its Python callee
// (Pointwise and Reduction take theirs from the op). The IR of a record is
// built by replay_record().
#define NVFUSE_RECORD_KINDS(X)                         \
  X(DefineTensor, "fd.define_tensor")                  \
  X(DefineScalar, "fd.define_scalar")                  \
  X(DefineVector, "fd.define_vector")                  \
  X(Pointwise, "")                                     \
  X(Cast, "fd.ops.cast")                               \
  X(BroadcastInDim, "fd.ops.broadcast_in_dim")         \
  X(Broadcast, "fd.ops.broadcast")                     \
  X(Expand, "fd.ops.expand")                           \
  X(Reduction, "")                                     \
  X(VarMean, "fd.ops.var_mean")                        \
  X(Var, "fd.ops.var")                                 \
  X(Mean, "fd.ops.mean")                               \
  X(Welford, "fd.ops.welford")                         \
  X(Reshape, "fd.ops.reshape")                         \
  X(Permute, "fd.ops.permute")                         \
  X(Squeeze, "fd.ops.squeeze")                         \
  X(Slice, "fd.ops.slice")                             \
  X(Pad, "fd.ops.pad")                                 \
  X(Cat, "fd.ops.cat")                                 \
  X(Select, "fd.ops.select")                           \
  X(IndexSelect, "fd.ops.index_select")                \
  X(Gather, "fd.ops.gather")                           \
  X(TakeAlongAxis, "fd.ops.take_along_axis")           \
  X(Scatter, "fd.ops.scatter")                         \
  X(IndexPutAccumulate, "fd.ops.index_put_accumulate") \
  X(EmbeddingFwd, "fd.ops.embedding_fwd")              \
  X(Triu, "fd.ops.triu")                               \
  X(Cumsum, "fd.ops.cumsum")                           \
  X(Full, "fd.ops.full")                               \
  X(Iota, "fd.ops.iota")                               \
  X(Uniform, "fd.ops.uniform")                         \
  X(Normal, "fd.ops.normal")                           \
  X(RandLike, "fd.ops.rand_like")                      \
  X(RandnLike, "fd.ops.randn_like")                    \
  X(Matmul, "fd.ops.matmul")                           \
  X(Linear, "fd.ops.linear")                           \
  X(GroupedMm, "fd.ops.grouped_mm")                    \
  X(SdpfaFwd, "fd.ops.sdpfa_fwd")                      \
  X(SdpfaBwd, "fd.ops.sdpfa_bwd")                      \
  X(Topk, "fd.ops.topk")                               \
  X(Argsort, "fd.ops.argsort")                         \
  X(Size, "fd.ops.size")                               \
  X(Shape, "fd.ops.shape")                             \
  X(At, "fd.ops.at")                                   \
  X(StrideOrder, "fd.ops.stride_order")                \
  X(AddOutput, "fd.add_output")                        \
  X(SetDeviceMesh, "fd.sched._set_device_mesh")        \
  X(SplitAxis, "fd.sched.split")                       \
  X(ParallelizeAxis, "fd.sched.parallelize")

enum class RecordKind {
#define NVFUSE_RECORD_KIND_ENUM(kind, method) kind,
  NVFUSE_RECORD_KINDS(NVFUSE_RECORD_KIND_ENUM)
#undef NVFUSE_RECORD_KIND_ENUM
};

// The kind whose Python callee is `method` ("fd.ops.reshape"); nullopt for
// none, and for Pointwise and Reduction (which are named by their op).
std::optional<RecordKind> record_kind_of_method(const std::string& method);

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
    return kind == other.kind && op == other.op && args == other.args && outputs == other.outputs;
  }
  size_t hash() const;

 private:
  const ArgValue* find_or_throw(const std::string& keyword) const;
};

std::string to_python(const ArgValue& value);

}  // namespace nvfuse
