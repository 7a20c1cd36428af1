#include "ir/scalar.h"

#include "ir/errors.h"

namespace nvfuse {

Scalar::Scalar(Fusion* fusion, DataType dtype, std::optional<ScalarValue> value)
    : Val(fusion, ValKind::kScalar, dtype) {
  if (value.has_value()) {
    value_ = value->cast_to(dtype);
  }
}

const ScalarValue& Scalar::value() const {
  NVFUSE_ASSERT(is_constant(), "value() of the symbolic scalar ", to_string());
  return *value_;
}

std::optional<int64_t> Scalar::constant_int() const {
  if (!is_constant() || !value_->is_int()) {
    return std::nullopt;
  }
  return value_->as_int();
}

std::string Scalar::to_string() const {
  if (is_constant()) {
    return value_->to_python();
  }
  const char* prefix = "s";
  switch (category_of(dtype())) {
    case TypeCategory::kInt:
      prefix = "i";
      break;
    case TypeCategory::kFloat:
      prefix = "d";
      break;
    case TypeCategory::kBool:
      prefix = "b";
      break;
    case TypeCategory::kComplex:
      prefix = "c";
      break;
    case TypeCategory::kNone:
      break;
  }
  return prefix + std::to_string(number());
}

}  // namespace nvfuse
