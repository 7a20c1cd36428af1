#include "ops/pointwise.h"

#include "ops/new_axes.h"

#include <algorithm>

#include "ir/fusion.h"
#include "ops/broadcast.h"
#include "ir/type_promotion.h"

namespace nvfuse {

namespace {

struct CombinedAxes {
  std::vector<IterDomain*> axes;
  std::vector<std::pair<Scalar*, Scalar*>> equalities;
};

// The output axis where several operands meet: iterating if any operand
// iterates there, else a broadcast (expanded if any operand is). Every size
// that is not a plain broadcast must agree with the first such size: checked
// now for constants, recorded as an equality for run time otherwise.
IterDomain* combine_axis(Fusion* fusion, const std::vector<IterDomain*>& ids, OpType op,
    int64_t axis, CombinedAxes& result) {
  Scalar* first_size = nullptr;
  Scalar* iteration_extent = nullptr;
  Scalar* expanded_extent = nullptr;
  for (IterDomain* id : ids) {
    if (id->is_broadcast() && !id->is_expanded()) {
      continue;
    }
    Scalar* size = id->logical_extent();
    if (first_size == nullptr) {
      first_size = size;
    } else if (size != first_size) {
      NVFUSE_CHECK(!(first_size->constant_int() && size->constant_int() &&
                       first_size->constant_int() != size->constant_int()),
          name_of(op), ": operands have sizes ", first_size->to_string(), " and ",
          size->to_string(), " at axis ", axis,
          "; they must be equal, or one must be a broadcast (size-1) axis");
      result.equalities.emplace_back(first_size, size);
    }
    Scalar*& slot = id->is_broadcast() ? expanded_extent : iteration_extent;
    if (slot == nullptr) {
      slot = size;
    }
  }
  if (iteration_extent != nullptr) {
    return fusion->create<IterDomain>(iteration_extent, IterType::kIteration);
  }
  return fusion->create<IterDomain>(fusion->one(), IterType::kBroadcast, expanded_extent);
}

CombinedAxes combine_tensor_axes(const std::vector<TensorView*>& tensors, OpType op) {
  CombinedAxes result;
  if (tensors.empty()) {
    return result;
  }
  Fusion* fusion = tensors.front()->fusion();
  const int64_t rank = tensors.front()->rank();
  for (int64_t axis = 0; axis < rank; ++axis) {
    std::vector<IterDomain*> ids;
    for (TensorView* tv : tensors) {
      ids.push_back(tv->logical()[axis]);
    }
    result.axes.push_back(combine_axis(fusion, ids, op, axis, result));
  }
  return result;
}

// Ops whose torch CUDA kernels read a Python scalar operand converted to
// the common dtype (iter.scalar_value<scalar_t>). Not add, sub, mul, div or
// truediv: those read it unrounded in their math type
// (original_scalar_value<opmath_t>; torch's CPU add and sub round, its CUDA
// kernels do not, and nvfuse follows CUDA), nor pow, lerp, clamp, addcmul
// or an alpha (Scalar overloads read in the math type).
bool rounds_scalars_to_common_type(OpType op) {
  switch (op) {
    case OpType::fmod:
    case OpType::mod:
    case OpType::remainder:
    case OpType::atan2:
    case OpType::maximum:
    case OpType::minimum:
    case OpType::eq:
    case OpType::ne:
    case OpType::lt:
    case OpType::le:
    case OpType::gt:
    case OpType::ge:
    case OpType::nextafter:
    case OpType::where:
      return true;
    default:
      return false;
  }
}

// pow(tensor, 0.5) and pow(tensor, -0.5) as torch computes them, through
// sqrt and rsqrt (its kernels' fast paths), which differ from pow at -0.0
// and -inf: sqrt(-0.0) = -0.0, rsqrt(-0.0) = -inf, sqrt(-inf) = NaN.
Val* as_root(OpType op, const std::vector<Val*>& operands, DataType common) {
  if (op != OpType::pow || !operands[0]->is<TensorView>() || !is_floating(common) ||
      !operands[1]->is<Scalar>() || !operands[1]->as<Scalar>()->is_constant()) {
    return nullptr;
  }
  const ScalarValue& exponent = operands[1]->as<Scalar>()->value();
  if (exponent.is_complex()) {
    return nullptr;
  }
  const double e = exponent.as_double();
  if (e == 0.5 || e == -0.5) {
    Val* base = operands[0];
    if (base->dtype() != common) {
      base = cast(base, common);
    }
    return pointwise(e > 0 ? OpType::sqrt : OpType::rsqrt, {base});
  }
  return nullptr;
}

}  // namespace

Val* pointwise(OpType op, std::vector<Val*> operands) {
  const OpInfo& info = info_of(op);
  NVFUSE_TYPE_CHECK(static_cast<int>(operands.size()) == info.arity, info.name, " takes ",
      info.arity, " operands, got ", operands.size());
  Fusion* fusion = operands.front()->fusion();
  const int first = first_promoted_operand(op);
  if (op == OpType::where) {
    NVFUSE_TYPE_CHECK(operands[0]->dtype() == DataType::Bool,
        "where: the condition must be Bool, got ", operands[0]->dtype(),
        "; compare it or cast it to Bool first");
  }

  const std::vector<Val*> promoted(operands.begin() + first, operands.end());
  const bool tensor_result =
      std::any_of(operands.begin(), operands.end(), [](Val* v) { return v->is<TensorView>(); });
  const DataType common = result_type(promoted, tensor_result);
  NVFUSE_TYPE_CHECK(
      accepts_dtype(info.accepts, common), info.name, " does not accept operands of type ", common);
  const DataType compute = compute_type_of(info, common);
  const DataType out_dtype = output_type_of(info, compute);

  if (Val* root = as_root(op, operands, common)) {
    return root;
  }

  // torch.threshold rounds its threshold and value to the tensor's type
  // before comparing (a bf16 tensor compares against bf16(0.1)).
  if (op == OpType::threshold) {
    for (size_t i = 1; i < operands.size(); ++i) {
      if (operands[i]->is<Scalar>() && operands[i]->dtype() != compute) {
        operands[i] = cast(operands[i], compute);
      }
    }
  }
  // Comparisons, remainders and where take a Python scalar in the common
  // dtype: beside a bf16 tensor, 0.1 is bf16(0.1), so bf16(0.1) == 0.1
  // holds and remainder(x, 0.3) stays below bf16(0.3).
  if (rounds_scalars_to_common_type(op) && is_reduced_float(common)) {
    for (size_t i = first; i < operands.size(); ++i) {
      if (operands[i]->is<Scalar>() && operands[i]->dtype() != common) {
        operands[i] = cast(operands[i], common);
      }
    }
  }

  // Tensors are cast to the compute type; scalars stay as given (they are
  // applied in the op's math type, as torch applies Python scalars).
  int64_t rank = 0;
  for (size_t i = 0; i < operands.size(); ++i) {
    if (!operands[i]->is<TensorView>()) {
      continue;
    }
    if (static_cast<int>(i) >= first && operands[i]->dtype() != compute) {
      operands[i] = cast(operands[i], compute);
    }
    rank = std::max(rank, operands[i]->as<TensorView>()->rank());
  }

  std::vector<TensorView*> tensors;
  for (Val*& operand : operands) {
    if (!operand->is<TensorView>()) {
      continue;
    }
    auto* tv = operand->as<TensorView>();
    // 0-d tensors broadcast implicitly (they stay 0-d, like torch scalars);
    // lower-rank tensors gain leading broadcast axes.
    if (tv->rank() > 0 && tv->rank() < rank) {
      std::vector<bool> is_new(rank, true);
      std::fill(is_new.end() - tv->rank(), is_new.end(), false);
      tv = broadcast(tv, is_new);
      operand = tv;
    }
    if (tv->rank() > 0) {
      tensors.push_back(tv);
    }
  }

  Val* out = nullptr;
  CombinedAxes combined = combine_tensor_axes(tensors, op);
  if (!tensors.empty()) {
    out = fusion->create<TensorView>(TensorDomain(std::move(combined.axes)), out_dtype);
  } else if (std::any_of(
                 operands.begin(), operands.end(), [](Val* v) { return v->is<TensorView>(); })) {
    out = fusion->create<TensorView>(TensorDomain(std::vector<IterDomain*>{}), out_dtype);
  } else {
    out = fusion->create<Scalar>(out_dtype, std::nullopt);
  }
  PointwiseOp::make(out, op, std::move(operands));
  for (const auto& [a, b] : combined.equalities) {
    fusion->add_extent_equality(a, b, out);
  }
  return out;
}

Val* cast(Val* value, DataType dtype) {
  NVFUSE_TYPE_CHECK(
      dtype != DataType::Null && dtype != DataType::Index, "cast: cannot cast to ", dtype);
  if (value->dtype() == dtype) {
    return pointwise(OpType::set, {value});
  }
  Fusion* fusion = value->fusion();
  if (value->is<Scalar>() && value->as<Scalar>()->is_constant()) {
    return fusion->constant(value->as<Scalar>()->value(), dtype);  // folded
  }
  Val* out = nullptr;
  if (value->is<TensorView>()) {
    auto* tv = value->as<TensorView>();
    out = new_tensor_like_axes(fusion, tv->logical(), dtype);
  } else {
    out = fusion->create<Scalar>(dtype, std::nullopt);
  }
  CastOp::make(out, value);
  return out;
}

}  // namespace nvfuse
