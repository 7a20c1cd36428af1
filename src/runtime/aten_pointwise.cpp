#include "runtime/aten_pointwise.h"

#include <ATen/ATen.h>

#include "ir/errors.h"
#include "runtime/aten_types.h"

namespace nvfuse {

namespace {

at::Scalar scalar_of(const AtenOperand& operand) {
  if (operand.scalar.has_value()) {
    return to_aten_scalar(*operand.scalar);
  }
  return operand.tensor.item();
}

bool is_scalar(const AtenOperand& operand) { return operand.scalar.has_value(); }

// Integer div, fmod and remainder without the CPU's trap: x86 division
// faults on the most negative value divided by -1 (eager torch dies of
// SIGFPE there). That quotient wraps to the value itself and the remainder
// is 0, as the generated kernels compute them (codegen/device_runtime.cuh).
at::Tensor integer_division(const at::Tensor& a, const at::Tensor& b, OpType op) {
  if (a.scalar_type() == at::kBool) {
    return op == OpType::div ? at::div(a, b, "trunc") : at::fmod(a, b);
  }
  const at::Tensor by_minus_one = at::eq(b, -1);
  const at::Tensor safe_b = at::where(by_minus_one, at::ones_like(b), b);
  switch (op) {
    case OpType::div:
      return at::where(by_minus_one, at::neg(a), at::div(a, safe_b, "trunc"));
    case OpType::remainder:
      return at::where(by_minus_one, at::zeros_like(a), at::remainder(a, safe_b));
    default:
      return at::where(by_minus_one, at::zeros_like(a), at::fmod(a, safe_b));
  }
}

}  // namespace

at::Tensor apply_pointwise(
    OpType op, const std::vector<AtenOperand>& operands, at::ScalarType compute) {
  auto arg = [&](size_t i) -> const at::Tensor& { return operands.at(i).tensor; };
  const bool integral = at::isIntegralType(compute, /*includeBool=*/true);
  switch (op) {
    case OpType::abs:
      return at::abs(arg(0));
    case OpType::acos:
      return at::acos(arg(0));
    case OpType::acosh:
      return at::acosh(arg(0));
    case OpType::asin:
      return at::asin(arg(0));
    case OpType::asinh:
      return at::asinh(arg(0));
    case OpType::atan:
      return at::atan(arg(0));
    case OpType::atanh:
      return at::atanh(arg(0));
    case OpType::bitwise_not:
      return at::bitwise_not(arg(0));
    case OpType::ceil:
      return integral ? arg(0).clone() : at::ceil(arg(0));
    case OpType::cos:
      return at::cos(arg(0));
    case OpType::cosh:
      return at::cosh(arg(0));
    case OpType::erf:
      return at::erf(arg(0));
    case OpType::erfc:
      return at::erfc(arg(0));
    case OpType::erfcinv:  // erfcinv(x) = erfinv(1 - x)
      return at::erfinv(at::rsub(arg(0), 1));
    case OpType::erfinv:
      return at::erfinv(arg(0));
    case OpType::exp:
      return at::exp(arg(0));
    case OpType::exp2:
      return at::exp2(arg(0));
    case OpType::expm1:
      return at::expm1(arg(0));
    case OpType::floor:
      return integral ? arg(0).clone() : at::floor(arg(0));
    case OpType::frac:
      return at::frac(arg(0));
    case OpType::isfinite:
      return at::isfinite(arg(0));
    case OpType::isinf:
      return at::isinf(arg(0));
    case OpType::isnan:
      return at::isnan(arg(0));
    case OpType::isneginf:
      return at::isneginf(arg(0));
    case OpType::isposinf:
      return at::isposinf(arg(0));
    case OpType::isreal:
      return at::isreal(arg(0));
    case OpType::lgamma:
      return at::lgamma(arg(0));
    case OpType::log:
      return at::log(arg(0));
    case OpType::log10:
      return at::log10(arg(0));
    case OpType::log1p:
      return at::log1p(arg(0));
    case OpType::log2:
      return at::log2(arg(0));
    case OpType::logical_not:
      return at::logical_not(arg(0));
    case OpType::neg:
      return at::neg(arg(0));
    case OpType::reciprocal:
      return at::reciprocal(arg(0));
    case OpType::relu:
      return at::relu(arg(0));
    case OpType::round:
      return integral ? arg(0).clone() : at::round(arg(0));
    case OpType::rsqrt:
      return at::rsqrt(arg(0));
    case OpType::sigmoid:
      return at::sigmoid(arg(0));
    case OpType::sign:
      return at::sign(arg(0));
    case OpType::signbit:
      return at::signbit(arg(0));
    case OpType::silu:
      return at::silu(arg(0));
    case OpType::sin:
      return at::sin(arg(0));
    case OpType::sinh:
      return at::sinh(arg(0));
    case OpType::sqrt:
      return at::sqrt(arg(0));
    case OpType::tan:
      return at::tan(arg(0));
    case OpType::tanh:
      return at::tanh(arg(0));
    case OpType::trunc:
      return integral ? arg(0).clone() : at::trunc(arg(0));
    case OpType::set:
    case OpType::segment_set:
      return arg(0).clone();
    case OpType::real:
      return at::real(arg(0)).clone();
    case OpType::imag:
      return at::imag(arg(0)).clone();
    case OpType::add:
      return at::add(arg(0), arg(1));
    case OpType::sub:
      return at::sub(arg(0), arg(1));
    case OpType::mul:
      return at::mul(arg(0), arg(1));
    case OpType::div:  // C semantics for integers: truncation
      return integral ? integer_division(arg(0), arg(1), op) : at::div(arg(0), arg(1));
    case OpType::truediv:
      return at::div(arg(0), arg(1));
    case OpType::fmod:
    case OpType::mod:  // C semantics: the sign of the dividend
      return integral ? integer_division(arg(0), arg(1), op) : at::fmod(arg(0), arg(1));
    case OpType::remainder:  // Python semantics: the sign of the divisor
      return integral ? integer_division(arg(0), arg(1), op) : at::remainder(arg(0), arg(1));
    case OpType::pow:
      // A number exponent takes ATen's Scalar overload, whose kernels
      // compute 2, 3, -2, 0.5, -0.5 and -1 without pow (as the generated
      // kernels do: codegen/expr_statement.cpp).
      return !integral && is_scalar(operands.at(1)) ? at::pow(arg(0), scalar_of(operands[1]))
                                                    : at::pow(arg(0), arg(1));
    case OpType::atan2:
      return at::atan2(arg(0), arg(1));
    case OpType::maximum:
      return at::maximum(arg(0), arg(1));
    case OpType::minimum:
      return at::minimum(arg(0), arg(1));
    case OpType::eq:
      return at::eq(arg(0), arg(1));
    case OpType::ne:
      return at::ne(arg(0), arg(1));
    case OpType::lt:
      return at::lt(arg(0), arg(1));
    case OpType::le:
      return at::le(arg(0), arg(1));
    case OpType::gt:
      return at::gt(arg(0), arg(1));
    case OpType::ge:
      return at::ge(arg(0), arg(1));
    case OpType::logical_and:
      return at::logical_and(arg(0), arg(1));
    case OpType::logical_or:
      return at::logical_or(arg(0), arg(1));
    case OpType::bitwise_and:
      return at::bitwise_and(arg(0), arg(1));
    case OpType::bitwise_or:
      return at::bitwise_or(arg(0), arg(1));
    case OpType::bitwise_xor:
      return at::bitwise_xor(arg(0), arg(1));
    case OpType::bitwise_left_shift:
      return at::bitwise_left_shift(arg(0), arg(1));
    case OpType::bitwise_right_shift:
      return at::bitwise_right_shift(arg(0), arg(1));
    case OpType::gcd:
      return at::gcd(arg(0), arg(1));
    case OpType::nextafter:
      return at::nextafter(arg(0), arg(1));
    case OpType::add_alpha:  // arg1 + alpha * arg2
      return is_scalar(operands.at(2)) ? at::add(arg(0), arg(1), scalar_of(operands[2]))
                                       : at::add(arg(0), at::mul(arg(1), arg(2)));
    case OpType::sub_alpha:  // arg1 - alpha * arg2
      return is_scalar(operands.at(2)) ? at::sub(arg(0), arg(1), scalar_of(operands[2]))
                                       : at::sub(arg(0), at::mul(arg(1), arg(2)));
    case OpType::where:
      return at::where(arg(0), arg(1), arg(2));
    case OpType::lerp:
      // lerp's Tensor overloads want its operands in one dtype; a number
      // is held as a 64-bit wrapped number.
      return is_scalar(operands.at(2))
          ? at::lerp(arg(0).to(compute), arg(1).to(compute), scalar_of(operands[2]))
          : at::lerp(arg(0).to(compute), arg(1).to(compute), arg(2).to(compute));
    case OpType::clamp:
      return at::clamp(arg(0), arg(1), arg(2));
    case OpType::threshold:  // torch.threshold: x <= threshold ? value : x
      return at::where(at::le(arg(0), arg(1)), arg(2), arg(0));
    case OpType::addcmul:  // arg + value * tensor1 * tensor2
      return is_scalar(operands.at(3)) ? at::addcmul(arg(0), arg(1), arg(2), scalar_of(operands[3]))
                                       : at::add(arg(0), at::mul(at::mul(arg(1), arg(2)), arg(3)));
    case OpType::ceil_div:
      return integral ? at::div(at::sub(at::add(arg(0), arg(1)), 1), arg(1), "trunc")
                      : at::ceil(at::div(arg(0), arg(1)));
  }
  NVFUSE_ASSERT(false, "no reference semantics for op ", name_of(op));
  return {};
}

}  // namespace nvfuse
