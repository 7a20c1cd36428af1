// A scalar value in the IR: a constant, a symbolic input, an extent, or the
// result of scalar arithmetic.
#pragma once

#include <optional>
#include <string>

#include "ir/scalar_value.h"
#include "ir/statement.h"

namespace nvfuse {

class Scalar : public Val {
 public:
  static constexpr ValKind kValKind = ValKind::kScalar;

  // A constant when `value` is set (stored converted to `dtype`'s kind),
  // else symbolic: bound at run time or computed by its definition.
  Scalar(Fusion* fusion, DataType dtype, std::optional<ScalarValue> value);

  bool is_constant() const { return value_.has_value(); }
  const ScalarValue& value() const;
  // The value when this is an integral constant.
  std::optional<int64_t> constant_int() const;
  bool is_constant_int(int64_t v) const { return constant_int() == v; }

  // "3" for a constant; "i2" (Int), "d2" (Double), "b2" (Bool), "c2"
  // (complex) for a symbolic scalar.
  std::string to_string() const;

 private:
  std::optional<ScalarValue> value_;
};

}  // namespace nvfuse
