#include "runtime/aten_types.h"

#include "ir/errors.h"

namespace nvfuse {

at::ScalarType to_aten(DataType dtype) {
  switch (dtype) {
    case DataType::Double:
      return at::kDouble;
    case DataType::Float:
      return at::kFloat;
    case DataType::Half:
      return at::kHalf;
    case DataType::BFloat16:
      return at::kBFloat16;
    case DataType::Int:
    case DataType::Index:
      return at::kLong;
    case DataType::Int32:
      return at::kInt;
    case DataType::Bool:
      return at::kBool;
    case DataType::ComplexFloat:
      return at::kComplexFloat;
    case DataType::ComplexDouble:
      return at::kComplexDouble;
    case DataType::Float8_e4m3fn:
      return at::kFloat8_e4m3fn;
    case DataType::Float8_e5m2:
      return at::kFloat8_e5m2;
    case DataType::UInt64:
      return at::kUInt64;
    case DataType::Null:
      break;
  }
  NVFUSE_ASSERT(false, "DataType ", dtype, " has no ATen type");
  return at::kFloat;
}

DataType from_aten(at::ScalarType type) {
  switch (type) {
    case at::kDouble:
      return DataType::Double;
    case at::kFloat:
      return DataType::Float;
    case at::kHalf:
      return DataType::Half;
    case at::kBFloat16:
      return DataType::BFloat16;
    case at::kLong:
      return DataType::Int;
    case at::kInt:
      return DataType::Int32;
    case at::kBool:
      return DataType::Bool;
    case at::kComplexFloat:
      return DataType::ComplexFloat;
    case at::kComplexDouble:
      return DataType::ComplexDouble;
    case at::kFloat8_e4m3fn:
      return DataType::Float8_e4m3fn;
    case at::kFloat8_e5m2:
      return DataType::Float8_e5m2;
    case at::kUInt64:
      return DataType::UInt64;
    default:
      NVFUSE_CHECK_AS(ErrorKind::kInputType, false, "torch dtype ", c10::toString(type),
          " is not supported by nvfuse");
  }
  return DataType::Null;
}

at::Scalar to_aten_scalar(const ScalarValue& value) {
  if (value.is_bool()) {
    return at::Scalar(value.as_bool());
  }
  if (value.is_int()) {
    return at::Scalar(value.as_int());
  }
  if (value.is_complex()) {
    return at::Scalar(c10::complex<double>(value.as_complex()));
  }
  return at::Scalar(value.as_double());
}

ScalarValue from_aten_scalar(const at::Scalar& value) {
  if (value.isBoolean()) {
    return ScalarValue(value.toBool());
  }
  if (value.isIntegral(/*includeBool=*/false)) {
    return ScalarValue(value.toLong());
  }
  if (value.isComplex()) {
    return ScalarValue(std::complex<double>(value.toComplexDouble()));
  }
  return ScalarValue(value.toDouble());
}

}  // namespace nvfuse
