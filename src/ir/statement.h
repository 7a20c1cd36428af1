// The nodes of the fusion IR: values (Val) and the expressions (Expr) that
// define them. A Fusion owns every node; nodes are immutable once built
// except for the use lists and the loop/allocation domains of tensors.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "ir/data_type.h"
#include "ir/errors.h"
#include "ir/op_table.h"

namespace nvfuse {

class Fusion;
class Expr;

class Statement {
 public:
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  virtual ~Statement() = default;

  Fusion* fusion() const { return fusion_; }
  // Position in the fusion's creation order. Creation order is topological:
  // a node only refers to nodes created before it.
  int64_t serial() const { return serial_; }

 protected:
  explicit Statement(Fusion* fusion) : fusion_(fusion) {}

 private:
  friend class Fusion;
  Fusion* fusion_;
  int64_t serial_ = -1;
};

enum class ValKind { kScalar, kIterDomain, kTensorView };

class Val : public Statement {
 public:
  ValKind val_kind() const { return val_kind_; }
  DataType dtype() const { return dtype_; }
  Expr* definition() const { return definition_; }
  // Once per operand that reads this Val: mul(x, x) is listed twice.
  const std::vector<Expr*>& uses() const { return uses_; }
  // Each expr that reads this Val once, in first-use order: what a pass
  // that replaces its uses walks (replacing an expr destroys it, so a
  // second entry of it would be dangling).
  std::vector<Expr*> distinct_uses() const;
  // Per-kind number, for printing: T3, iS2, i1.
  int64_t number() const { return number_; }

  template <typename T>
  bool is() const {
    return val_kind_ == T::kValKind;
  }
  template <typename T>
  T* as() {
    NVFUSE_ASSERT(is<T>(), "Val has the wrong kind for this cast");
    return static_cast<T*>(this);
  }
  template <typename T>
  const T* as() const {
    NVFUSE_ASSERT(is<T>(), "Val has the wrong kind for this cast");
    return static_cast<const T*>(this);
  }

 protected:
  Val(Fusion* fusion, ValKind kind, DataType dtype);

 private:
  friend class Expr;
  friend class Fusion;
  ValKind val_kind_;
  DataType dtype_;
  int64_t number_ = 0;
  Expr* definition_ = nullptr;
  std::vector<Expr*> uses_;
};

// Which generated kernels compute an Expr kind. Every kind also runs on the
// reference evaluator (ATen, op by op), whose dispatch fails to compile
// until it handles a new kind.
enum ExprKernels : unsigned {
  // Only ATen: the segmenter cuts the expr out into an ATen call of its own.
  kAtenOnly = 0,
  // The pointwise and reduction kernels compute it element by element (and
  // the coordinate kernel with them).
  kElementwise = 1,
  // The coordinate kernel computes it: values read or made at other
  // coordinates (slices, gathers, permutes, factories, random, scans).
  kCoordinate = 2,
  // A transform of iteration domains, not a tensor op: nothing computes it.
  kDomain = 4,
};

// X(kind, kernels): every Expr subclass and the kernels that compute it.
// Dispatch (dispatch.h), cloning, the kind names and kernels_of are
// generated from this list; printing and hashing are generic over inputs,
// outputs and attributes. A new kind needs its class and its row here.
#define NVFUSE_EXPR_KINDS(X)         \
  X(PointwiseOp, kElementwise)       \
  X(CastOp, kElementwise)            \
  X(BroadcastOp, kElementwise)       \
  X(ExpandOp, kElementwise)          \
  X(ReductionOp, kElementwise)       \
  X(VarMeanOp, kElementwise)         \
  X(ReshapeOp, kCoordinate)          \
  X(PermuteOp, kCoordinate)          \
  X(SqueezeOp, kCoordinate)          \
  X(SliceOp, kCoordinate)            \
  X(PadOp, kCoordinate)              \
  X(CatOp, kCoordinate)              \
  X(SelectOp, kCoordinate)           \
  X(IndexSelectOp, kCoordinate)      \
  X(GatherOp, kCoordinate)           \
  X(ScatterOp, kCoordinate)          \
  X(IndexPutAccumulateOp, kAtenOnly) \
  X(EmbeddingFwdOp, kCoordinate)     \
  X(TriuOp, kCoordinate)             \
  X(CumsumOp, kCoordinate)           \
  X(FullOp, kCoordinate)             \
  X(IotaOp, kCoordinate)             \
  X(RngOp, kCoordinate)              \
  X(MatmulOp, kAtenOnly)             \
  X(LinearOp, kAtenOnly)             \
  X(GroupedMmOp, kAtenOnly)          \
  X(SdpaFwdOp, kAtenOnly)            \
  X(SdpaBwdOp, kAtenOnly)            \
  X(TopkOp, kAtenOnly)               \
  X(ArgsortOp, kAtenOnly)            \
  X(Split, kDomain)                  \
  X(Merge, kDomain)

enum class ExprKind {
#define NVFUSE_EXPR_KIND_ENUM(kind, kernels) kind,
  NVFUSE_EXPR_KINDS(NVFUSE_EXPR_KIND_ENUM)
#undef NVFUSE_EXPR_KIND_ENUM
};

const char* name_of(ExprKind kind);

// The row of NVFUSE_EXPR_KINDS: which generated kernels compute `kind`.
constexpr unsigned kernels_of(ExprKind kind) {
  switch (kind) {
#define NVFUSE_EXPR_KIND_KERNELS(kind, kernels) \
  case ExprKind::kind:                          \
    return kernels;
    NVFUSE_EXPR_KINDS(NVFUSE_EXPR_KIND_KERNELS)
#undef NVFUSE_EXPR_KIND_KERNELS
  }
  return kAtenOnly;
}

using AttributeValue =
    std::variant<bool, int64_t, double, DataType, OpType, std::vector<int64_t>, std::vector<bool>>;

struct Attribute {
  std::string name;
  AttributeValue value;
  bool operator==(const Attribute& other) const {
    return name == other.name && value == other.value;
  }
};

std::string to_string(const AttributeValue& value);

// Everything that defines an Expr besides its kind: what cloning copies.
struct ExprFields {
  std::vector<Val*> inputs;
  std::vector<Val*> outputs;
  std::vector<Attribute> attributes;
};

class Expr : public Statement {
 public:
  ExprKind kind() const { return kind_; }
  const std::vector<Val*>& inputs() const { return fields_.inputs; }
  const std::vector<Val*>& outputs() const { return fields_.outputs; }
  Val* input(size_t i) const;
  Val* output(size_t i) const;
  // True when `v` is one of the inputs (the uses within a set of exprs,
  // where Val::uses() would count a segment's neighbours too).
  bool reads(const Val* v) const {
    return std::find(inputs().begin(), inputs().end(), v) != inputs().end();
  }
  const std::vector<Attribute>& attributes() const { return fields_.attributes; }
  const ExprFields& fields() const { return fields_; }

  template <typename T>
  const T& attribute(size_t i) const {
    NVFUSE_ASSERT(i < fields_.attributes.size(), "attribute ", i, " missing");
    return std::get<T>(fields_.attributes[i].value);
  }

  template <typename T>
  bool is() const {
    return kind_ == T::kExprKind;
  }
  template <typename T>
  const T* as() const {
    NVFUSE_ASSERT(is<T>(), "Expr is a ", name_of(kind_), ", not the cast type");
    return static_cast<const T*>(this);
  }

  // The op's name in printed IR, e.g. "sin", "cast", "broadcast".
  std::string op_name() const;

 protected:
  Expr(Fusion* fusion, ExprKind kind, ExprFields fields);

 private:
  ExprKind kind_;
  ExprFields fields_;
};

}  // namespace nvfuse
