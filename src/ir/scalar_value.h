// A concrete scalar: the value of a constant, or of a bound symbolic scalar.
#pragma once

#include <complex>
#include <cstdint>
#include <ostream>
#include <string>
#include <variant>

#include "ir/data_type.h"

namespace nvfuse {

class ScalarValue {
 public:
  using Storage = std::variant<std::monostate, bool, int64_t, double, std::complex<double>>;

  ScalarValue() = default;
  ScalarValue(bool v) : storage_(v) {}
  ScalarValue(int64_t v) : storage_(v) {}
  ScalarValue(int v) : storage_(static_cast<int64_t>(v)) {}
  ScalarValue(double v) : storage_(v) {}
  ScalarValue(std::complex<double> v) : storage_(v) {}

  bool has_value() const { return storage_.index() != 0; }
  bool is_bool() const { return std::holds_alternative<bool>(storage_); }
  bool is_int() const { return std::holds_alternative<int64_t>(storage_); }
  bool is_double() const { return std::holds_alternative<double>(storage_); }
  bool is_complex() const { return std::holds_alternative<std::complex<double>>(storage_); }

  // Conversions follow C++ rules; converting a complex to a real type drops
  // the imaginary part, as torch's casts do.
  bool as_bool() const;
  int64_t as_int() const;
  double as_double() const;
  std::complex<double> as_complex() const;

  // The value converted to `dtype`: the C++ kind that stores it, rounded as
  // a value of that type would be (float, bf16 and half round to nearest
  // even; double goes to the half types through float, as in torch).
  ScalarValue cast_to(DataType dtype) const;
  // The natural DataType of the stored kind (Bool, Int, Double, ComplexDouble).
  DataType natural_dtype() const;

  const Storage& storage() const { return storage_; }
  bool operator==(const ScalarValue& other) const;
  bool operator!=(const ScalarValue& other) const { return !(*this == other); }
  size_t hash() const;

  // A Python literal that reads back to the same value: `True`, `3`,
  // `1e-05`, `float('inf')`, `complex(1.0, -2.0)`.
  std::string to_python() const;

 private:
  Storage storage_;
};

std::ostream& operator<<(std::ostream& os, const ScalarValue& value);

// Shortest decimal text that parses back to exactly `value` (always with a
// '.' or exponent, so Python reads it as a float).
std::string float_to_python(double value);

}  // namespace nvfuse
