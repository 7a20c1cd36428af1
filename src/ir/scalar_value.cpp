#include "ir/scalar_value.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <functional>

#include "ir/errors.h"

namespace nvfuse {

bool ScalarValue::as_bool() const {
  NVFUSE_ASSERT(has_value(), "reading an unset scalar value");
  return std::visit(
      [](const auto& v) -> bool {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return false;
        } else if constexpr (std::is_same_v<T, std::complex<double>>) {
          return v != std::complex<double>(0.0, 0.0);
        } else {
          return static_cast<bool>(v);
        }
      },
      storage_);
}

int64_t ScalarValue::as_int() const {
  NVFUSE_ASSERT(has_value(), "reading an unset scalar value");
  return std::visit(
      [](const auto& v) -> int64_t {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return 0;
        } else if constexpr (std::is_same_v<T, std::complex<double>>) {
          return static_cast<int64_t>(v.real());
        } else {
          return static_cast<int64_t>(v);
        }
      },
      storage_);
}

double ScalarValue::as_double() const {
  NVFUSE_ASSERT(has_value(), "reading an unset scalar value");
  return std::visit(
      [](const auto& v) -> double {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return 0.0;
        } else if constexpr (std::is_same_v<T, std::complex<double>>) {
          return v.real();
        } else {
          return static_cast<double>(v);
        }
      },
      storage_);
}

std::complex<double> ScalarValue::as_complex() const {
  if (is_complex()) {
    return std::get<std::complex<double>>(storage_);
  }
  return {as_double(), 0.0};
}

namespace {

// Rounds |value| to `bits` significant bits (round to nearest even), with
// subnormal spacing 2^min_exponent: the value a type of that precision holds.
double round_to_precision(double value, int bits, int min_exponent) {
  if (value == 0.0 || std::isnan(value) || std::isinf(value)) {
    return value;
  }
  int exponent = 0;
  std::frexp(value, &exponent);  // |value| = m * 2^exponent, m in [0.5, 1)
  const double ulp = std::ldexp(1.0, std::max(exponent - bits, min_exponent));
  return std::nearbyint(value / ulp) * ulp;
}

// The value a tensor of `dtype` would hold; torch converts double to the
// half types through float.
double round_to_dtype(double value, DataType dtype) {
  const double as_float = static_cast<float>(value);
  switch (dtype) {
    case DataType::Float:
      return as_float;
    case DataType::BFloat16:  // float: 8 significant bits, same exponent range
      return static_cast<float>(round_to_precision(as_float, 8, -133));
    case DataType::Half: {  // 11 significant bits, max 65504
      const double rounded = round_to_precision(as_float, 11, -24);
      return std::fabs(rounded) > 65504.0 ? std::copysign(INFINITY, rounded) : rounded;
    }
    default:
      return value;  // Double; float8 constants keep double precision
  }
}

}  // namespace

ScalarValue ScalarValue::cast_to(DataType dtype) const {
  if (!has_value()) {
    return *this;
  }
  switch (category_of(dtype)) {
    case TypeCategory::kBool:
      return ScalarValue(as_bool());
    case TypeCategory::kInt:
      return ScalarValue(as_int());
    case TypeCategory::kFloat:
      return ScalarValue(round_to_dtype(as_double(), dtype));
    case TypeCategory::kComplex:
      return ScalarValue(as_complex());
    case TypeCategory::kNone:
      break;
  }
  return *this;
}

DataType ScalarValue::natural_dtype() const {
  if (is_bool()) {
    return DataType::Bool;
  }
  if (is_int()) {
    return DataType::Int;
  }
  if (is_double()) {
    return DataType::Double;
  }
  if (is_complex()) {
    return DataType::ComplexDouble;
  }
  return DataType::Null;
}

bool ScalarValue::operator==(const ScalarValue& other) const {
  if (storage_.index() != other.storage_.index()) {
    return false;
  }
  if (is_double()) {
    // Bitwise, so that NaN constants compare equal and 0.0 differs from -0.0:
    // two definitions are the same only if they print the same.
    const double a = std::get<double>(storage_);
    const double b = std::get<double>(other.storage_);
    return std::memcmp(&a, &b, sizeof(double)) == 0;
  }
  return storage_ == other.storage_;
}

size_t ScalarValue::hash() const {
  const size_t kind = storage_.index();
  size_t h = std::visit(
      [](const auto& v) -> size_t {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return 0;
        } else if constexpr (std::is_same_v<T, std::complex<double>>) {
          return std::hash<double>()(v.real()) * 31 + std::hash<double>()(v.imag());
        } else {
          return std::hash<T>()(v);
        }
      },
      storage_);
  return h * 7 + kind;
}

std::string float_to_python(double value) {
  if (std::isnan(value)) {
    return "float('nan')";
  }
  if (std::isinf(value)) {
    return value > 0 ? "float('inf')" : "float('-inf')";
  }
  // The shortest text that reads back as `value` (what std::to_chars
  // gives, which would tie the module to a libstdc++ newer than the
  // manylinux_2_28 baseline).
  char buffer[64];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", digits, value);
    if (std::strtod(buffer, nullptr) == value) {
      break;
    }
  }
  std::string text(buffer);
  if (text.find_first_of(".en") == std::string::npos) {
    text += ".0";
  }
  return text;
}

std::string ScalarValue::to_python() const {
  if (is_bool()) {
    return std::get<bool>(storage_) ? "True" : "False";
  }
  if (is_int()) {
    return std::to_string(std::get<int64_t>(storage_));
  }
  if (is_double()) {
    return float_to_python(std::get<double>(storage_));
  }
  if (is_complex()) {
    const auto c = std::get<std::complex<double>>(storage_);
    return "complex(" + float_to_python(c.real()) + ", " + float_to_python(c.imag()) + ")";
  }
  return "None";
}

std::ostream& operator<<(std::ostream& os, const ScalarValue& value) {
  return os << value.to_python();
}

}  // namespace nvfuse
