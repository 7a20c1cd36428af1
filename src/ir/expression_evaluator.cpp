#include "ir/expression_evaluator.h"

#include <cmath>
#include <cstdlib>

#include "ir/exprs.h"

namespace nvfuse {

void ExpressionEvaluator::bind(const Scalar* scalar, ScalarValue value) {
  known_[scalar] = value.cast_to(scalar->dtype());
}

std::optional<ScalarValue> ExpressionEvaluator::evaluate(const Scalar* scalar) {
  if (scalar->is_constant()) {
    return scalar->value();
  }
  if (auto it = known_.find(scalar); it != known_.end()) {
    return it->second;
  }
  const Expr* def = scalar->definition();
  if (def == nullptr) {
    return std::nullopt;
  }
  std::vector<ScalarValue> operands;
  for (const Val* in : def->inputs()) {
    if (!in->is<Scalar>()) {
      return std::nullopt;
    }
    auto value = evaluate(in->as<Scalar>());
    if (!value.has_value()) {
      return std::nullopt;
    }
    operands.push_back(*value);
  }
  std::optional<ScalarValue> result;
  if (def->is<CastOp>()) {
    result = operands.at(0).cast_to(scalar->dtype());
  } else if (def->is<PointwiseOp>()) {
    result = evaluate_scalar_op(def->as<PointwiseOp>()->op(), operands, scalar->dtype());
  }
  if (result.has_value()) {
    known_[scalar] = *result;
  }
  return result;
}

namespace {

std::optional<ScalarValue> integer_op(OpType op, int64_t a, int64_t b) {
  switch (op) {
    case OpType::add:
      return ScalarValue(a + b);
    case OpType::sub:
      return ScalarValue(a - b);
    case OpType::mul:
      return ScalarValue(a * b);
    case OpType::div:  // C semantics: truncation, as the generated code does
      if (b == 0) {
        return std::nullopt;
      }
      if (b == -1) {  // INT64_MIN / -1 wraps (the hardware division traps)
        return ScalarValue(static_cast<int64_t>(0ULL - static_cast<uint64_t>(a)));
      }
      return ScalarValue(a / b);
    case OpType::ceil_div:
      if (b == 0) {
        return std::nullopt;
      }
      return ScalarValue((a + b - 1) / b);
    case OpType::mod:
    case OpType::fmod:
      if (b == 0) {
        return std::nullopt;
      }
      return ScalarValue(b == -1 ? int64_t{0} : a % b);
    case OpType::remainder: {
      if (b == 0) {
        return std::nullopt;
      }
      int64_t r = b == -1 ? 0 : a % b;
      return ScalarValue((r != 0 && ((r < 0) != (b < 0))) ? r + b : r);
    }
    case OpType::maximum:
      return ScalarValue(std::max(a, b));
    case OpType::minimum:
      return ScalarValue(std::min(a, b));
    default:
      return std::nullopt;
  }
}

std::optional<ScalarValue> float_op(OpType op, double a, double b) {
  switch (op) {
    case OpType::add:
      return ScalarValue(a + b);
    case OpType::sub:
      return ScalarValue(a - b);
    case OpType::mul:
      return ScalarValue(a * b);
    case OpType::div:
    case OpType::truediv:
      return ScalarValue(a / b);
    case OpType::fmod:
    case OpType::mod:
      return ScalarValue(std::fmod(a, b));
    case OpType::maximum:
      return ScalarValue(std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b));
    case OpType::minimum:
      return ScalarValue(std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b));
    default:
      return std::nullopt;
  }
}

template <typename T>
std::optional<ScalarValue> comparison(OpType op, T a, T b) {
  switch (op) {
    case OpType::eq:
      return ScalarValue(a == b);
    case OpType::ne:
      return ScalarValue(a != b);
    case OpType::lt:
      return ScalarValue(a < b);
    case OpType::le:
      return ScalarValue(a <= b);
    case OpType::gt:
      return ScalarValue(a > b);
    case OpType::ge:
      return ScalarValue(a >= b);
    default:
      return std::nullopt;
  }
}

}  // namespace

std::optional<ScalarValue> evaluate_scalar_op(
    OpType op, const std::vector<ScalarValue>& operands, DataType out_dtype) {
  for (const ScalarValue& v : operands) {
    if (v.is_complex()) {
      return std::nullopt;
    }
  }
  switch (op) {
    case OpType::set:
    case OpType::segment_set:
      return operands.at(0).cast_to(out_dtype);
    case OpType::neg:
      return is_integral(out_dtype) ? ScalarValue(-operands.at(0).as_int())
                                    : ScalarValue(-operands.at(0).as_double());
    case OpType::abs:
      return is_integral(out_dtype)
          ? ScalarValue(static_cast<int64_t>(std::llabs(operands.at(0).as_int())))
          : ScalarValue(std::fabs(operands.at(0).as_double()));
    case OpType::logical_not:
      return ScalarValue(!operands.at(0).as_bool());
    case OpType::logical_and:
      return ScalarValue(operands.at(0).as_bool() && operands.at(1).as_bool());
    case OpType::logical_or:
      return ScalarValue(operands.at(0).as_bool() || operands.at(1).as_bool());
    case OpType::where:
      return (operands.at(0).as_bool() ? operands.at(1) : operands.at(2)).cast_to(out_dtype);
    default:
      break;
  }
  if (operands.size() != 2) {
    return std::nullopt;
  }
  const ScalarValue& a = operands[0];
  const ScalarValue& b = operands[1];
  // Integers compare exactly, not through double.
  auto compared = (a.is_double() || b.is_double()) ? comparison(op, a.as_double(), b.as_double())
                                                   : comparison(op, a.as_int(), b.as_int());
  if (compared.has_value()) {
    return compared;
  }
  std::optional<ScalarValue> result = is_floating(out_dtype)
      ? float_op(op, a.as_double(), b.as_double())
      : integer_op(op, a.as_int(), b.as_int());
  if (!result.has_value()) {
    return std::nullopt;
  }
  return result->cast_to(out_dtype);
}

}  // namespace nvfuse
