#include "ir/statement.h"

#include <algorithm>
#include <sstream>

#include "ir/all_exprs.h"
#include "ir/python_list.h"
#include "ir/scalar_value.h"

namespace nvfuse {

Val::Val(Fusion* fusion, ValKind kind, DataType dtype)
    : Statement(fusion), val_kind_(kind), dtype_(dtype) {}

const char* name_of(ExprKind kind) {
  switch (kind) {
#define NVFUSE_EXPR_KIND_NAME(kind, kernels) \
  case ExprKind::kind:                       \
    return #kind;
    NVFUSE_EXPR_KINDS(NVFUSE_EXPR_KIND_NAME)
#undef NVFUSE_EXPR_KIND_NAME
  }
  return "<unknown ExprKind>";
}

std::string to_string(const AttributeValue& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          return v ? "True" : "False";
        } else if constexpr (std::is_same_v<T, int64_t>) {
          return std::to_string(v);
        } else if constexpr (std::is_same_v<T, double>) {
          return float_to_python(v);
        } else if constexpr (std::is_same_v<T, DataType>) {
          return std::string("DataType.") + name_of(v);
        } else if constexpr (std::is_same_v<T, OpType>) {
          return name_of(v);
        } else {
          return python_list(v);
        }
      },
      value);
}

std::vector<Expr*> Val::distinct_uses() const {
  std::vector<Expr*> distinct;
  for (Expr* use : uses_) {
    if (std::find(distinct.begin(), distinct.end(), use) == distinct.end()) {
      distinct.push_back(use);
    }
  }
  return distinct;
}

Expr::Expr(Fusion* fusion, ExprKind kind, ExprFields fields)
    : Statement(fusion), kind_(kind), fields_(std::move(fields)) {
  for (Val* in : fields_.inputs) {
    NVFUSE_ASSERT(in != nullptr, "null input of a ", name_of(kind));
    NVFUSE_ASSERT(in->fusion() == fusion, "input from another Fusion");
    in->uses_.push_back(this);
  }
  for (Val* out : fields_.outputs) {
    NVFUSE_ASSERT(out != nullptr, "null output of a ", name_of(kind));
    NVFUSE_ASSERT(out->definition_ == nullptr, "a Val may be defined only once (SSA)");
    out->definition_ = this;
  }
}

Val* Expr::input(size_t i) const {
  NVFUSE_ASSERT(i < inputs().size(), "input ", i, " of ", name_of(kind_));
  return inputs()[i];
}

Val* Expr::output(size_t i) const {
  NVFUSE_ASSERT(i < outputs().size(), "output ", i, " of ", name_of(kind_));
  return outputs()[i];
}

std::string Expr::op_name() const {
  switch (kind_) {
    case ExprKind::PointwiseOp:
      return name_of(as<PointwiseOp>()->op());
    case ExprKind::ReductionOp:
      return reduction_name(as<ReductionOp>()->op());
    case ExprKind::CastOp:
      return "cast";
    case ExprKind::BroadcastOp:
      return "broadcast";
    case ExprKind::ExpandOp:
      return "expand";
    case ExprKind::VarMeanOp:
      return "var_mean";
    case ExprKind::ReshapeOp:
      return "reshape";
    case ExprKind::PermuteOp:
      return "permute";
    case ExprKind::SqueezeOp:
      return "squeeze";
    case ExprKind::SliceOp:
      return "slice";
    case ExprKind::PadOp:
      return "pad";
    case ExprKind::CatOp:
      return "cat";
    case ExprKind::SelectOp:
      return "select";
    case ExprKind::IndexSelectOp:
      return "index_select";
    case ExprKind::GatherOp:
      return as<GatherOp>()->take_along_axis() ? "take_along_axis" : "gather";
    case ExprKind::ScatterOp:
      return "scatter";
    case ExprKind::IndexPutAccumulateOp:
      return "index_put_accumulate";
    case ExprKind::EmbeddingFwdOp:
      return "embedding_fwd";
    case ExprKind::TriuOp:
      return "triu";
    case ExprKind::CumsumOp:
      return "cumsum";
    case ExprKind::FullOp:
      return "full";
    case ExprKind::IotaOp:
      return "iota";
    case ExprKind::RngOp:
      return as<RngOp>()->is_normal() ? "normal" : "uniform";
    case ExprKind::MatmulOp:
      return "matmul";
    case ExprKind::LinearOp:
      return "linear";
    case ExprKind::GroupedMmOp:
      return "grouped_mm";
    case ExprKind::SdpaFwdOp:
      return "sdpfa_fwd";
    case ExprKind::SdpaBwdOp:
      return "sdpfa_bwd";
    case ExprKind::TopkOp:
      return "topk";
    case ExprKind::ArgsortOp:
      return "argsort";
    case ExprKind::Split:
      return "split";
    case ExprKind::Merge:
      return "merge";
  }
  return name_of(kind_);
}

}  // namespace nvfuse
