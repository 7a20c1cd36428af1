#include "ir/type_promotion.h"

#include "ir/exprs.h"
#include "ir/tensor_view.h"

namespace nvfuse {

namespace {

// torch's combine_categories(higher, lower): the higher tier's dtype wins
// unless the lower tier is of a higher category.
DataType combine_categories(DataType higher, DataType lower) {
  if (higher == DataType::Null) {
    return lower;
  }
  if (lower == DataType::Null) {
    return higher;
  }
  if (is_complex(higher)) {
    return higher;
  }
  if (is_complex(lower)) {
    // Keep the higher tier's precision when it is a float type.
    return is_floating(higher) ? complex_type_of(higher) : lower;
  }
  if (is_floating(higher)) {
    return higher;
  }
  if (higher == DataType::Bool || is_floating(lower)) {
    return promote_types(higher, lower);
  }
  return higher;
}

// A Python scalar takes the default dtype of its category (torch's
// "wrapped number" rule): Float for floats, ComplexFloat for complex.
DataType wrapped_scalar_type(DataType dtype) {
  if (is_complex(dtype)) {
    return DataType::ComplexFloat;
  }
  if (is_floating(dtype)) {
    return DataType::Float;
  }
  if (is_integral(dtype)) {
    return DataType::Int;
  }
  return dtype;
}

}  // namespace

DataType result_type(const std::vector<Val*>& operands, bool tensor_result) {
  DataType dim_result = DataType::Null;
  DataType zero_dim_result = DataType::Null;
  DataType scalar_result = DataType::Null;
  DataType plain = DataType::Null;
  bool any_tensor = false;
  for (const Val* v : operands) {
    plain = promote_types(plain, v->dtype());
    if (v->is<TensorView>()) {
      any_tensor = true;
      if (v->as<TensorView>()->rank() > 0) {
        dim_result = promote_types(dim_result, v->dtype());
      } else {
        zero_dim_result = promote_types(zero_dim_result, v->dtype());
      }
    } else {
      scalar_result = promote_types(scalar_result, wrapped_scalar_type(v->dtype()));
    }
  }
  if (!any_tensor) {
    return tensor_result ? scalar_result : plain;
  }
  return combine_categories(dim_result, combine_categories(zero_dim_result, scalar_result));
}

DataType compute_type_of(const OpInfo& info, DataType common) {
  if (info.promotion == Promotion::kIntToFloat && (is_integral(common) || is_boolean(common))) {
    return DataType::Float;
  }
  return common;
}

DataType output_type_of(const OpInfo& info, DataType compute) {
  switch (info.promotion) {
    case Promotion::kToBool:
      return DataType::Bool;
    case Promotion::kToReal:
      return real_type_of(compute);
    case Promotion::kCommon:
    case Promotion::kIntToFloat:
      return compute;
  }
  return compute;
}

DataType compute_type_of(const PointwiseOp& op) {
  const std::vector<Val*> promoted(
      op.inputs().begin() + first_promoted_operand(op.op()), op.inputs().end());
  return compute_type_of(info_of(op.op()), result_type(promoted));
}

}  // namespace nvfuse
