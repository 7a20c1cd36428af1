#include "codegen/emit_op.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include "codegen/kernel_args.h"
#include "ir/errors.h"

namespace nvfuse {

namespace {

std::string call(const std::string& fn, const std::vector<std::string>& args) {
  std::string text = fn + "(";
  for (size_t i = 0; i < args.size(); ++i) {
    text += (i ? ", " : "") + args[i];
  }
  return text + ")";
}

// Long libdevice functions that kernels may call instead of inlining per
// element (the device runtime's "heavy math": nvfuse::called_sinf, ...).
const std::set<std::string> kCalledMath = {"sin", "cos", "tan", "asin", "acos", "atan", "sinh",
    "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc", "erfinv", "erfcinv", "expm1", "log1p",
    "lgamma", "pow", "atan2", "fmod"};

// NVFUSE_CALL_HEAVY_MATH=1 calls them. Off by default: on an H100 the
// calls cost 4-14% of the time of compute-bound kernels (bias + tanh-GELU,
// a chain of sin/tanh/sigmoid, 64 MB), while they cut NVRTC's time on
// kernels of many such ops from seconds to a few hundred milliseconds.
// Until kernels budget their code volume, compile time is the opt-in.
bool calls_heavy_math() {
  static const bool calls = [] {
    const char* env = std::getenv("NVFUSE_CALL_HEAVY_MATH");
    return env != nullptr && std::string(env) == "1";
  }();
  return calls;
}

// The CUDA math function for `math`: sinf for Float, sin for Double (the
// runtime's called copy for the long ones).
std::string math_fn(const std::string& name, DataType math) {
  NVFUSE_ASSERT(is_floating(math), name, " needs a floating-point math type, got ", math);
  const std::string fn = math == DataType::Float ? name + "f" : name;
  return kCalledMath.count(name) && calls_heavy_math() ? "nvfuse::called_" + fn : fn;
}

std::string binary(const std::string& a, const char* op, const std::string& b) {
  return "(" + a + " " + op + " " + b + ")";
}

}  // namespace

std::string emit_constant(const ScalarValue& value, DataType math) {
  const std::string type = cuda_type_of(math);
  if (is_boolean(math)) {
    return value.as_bool() ? "true" : "false";
  }
  if (is_integral(math)) {
    return "static_cast<" + type + ">(" + std::to_string(value.as_int()) + "LL)";
  }
  const double v = value.as_double();
  if (std::isnan(v)) {
    return "static_cast<" + type + ">(__longlong_as_double(0x7ff8000000000000LL))";
  }
  if (std::isinf(v)) {
    return std::string("static_cast<") + type + ">(" + (v < 0 ? "-" : "") +
        "__longlong_as_double(0x7ff0000000000000LL))";
  }
  char text[40];
  std::snprintf(text, sizeof(text), "%.17g", v);
  return "static_cast<" + type + ">(" + text + ")";
}

std::string emit_pointwise(OpType op, const std::vector<std::string>& x, DataType math) {
  const std::string type = cuda_type_of(math);
  const std::string one = "static_cast<" + type + ">(1)";
  const bool integral = is_integral(math) || is_boolean(math);
  auto fn = [&](const char* name) { return call(math_fn(name, math), x); };
  switch (op) {
    case OpType::abs:
      if (is_boolean(math)) {
        return x[0];
      }
      return integral ? "(" + x[0] + " < 0 ? -" + x[0] + " : " + x[0] + ")" : fn("fabs");
    case OpType::acos:
      return fn("acos");
    case OpType::acosh:
      return fn("acosh");
    case OpType::asin:
      return fn("asin");
    case OpType::asinh:
      return fn("asinh");
    case OpType::atan:
      return fn("atan");
    case OpType::atanh:
      return fn("atanh");
    case OpType::bitwise_not:
      return is_boolean(math) ? "(!" + x[0] + ")" : "(~" + x[0] + ")";
    case OpType::ceil:
      return integral ? x[0] : fn("ceil");
    case OpType::cos:
      return fn("cos");
    case OpType::cosh:
      return fn("cosh");
    case OpType::erf:
      return fn("erf");
    case OpType::erfc:
      return fn("erfc");
    case OpType::erfcinv:
      return fn("erfcinv");
    case OpType::erfinv:
      return fn("erfinv");
    case OpType::exp:
      return fn("exp");
    case OpType::exp2:
      return fn("exp2");
    case OpType::expm1:
      return fn("expm1");
    case OpType::floor:
      return integral ? x[0] : fn("floor");
    case OpType::frac:
      return "(" + x[0] + " - " + call(math_fn("trunc", math), x) + ")";
    case OpType::isfinite:
      return call("nvfuse::isfinite_", x);
    case OpType::isinf:
      return call("nvfuse::isinf_", x);
    case OpType::isnan:
      return call("nvfuse::isnan_", x);
    case OpType::isneginf:
      return "(nvfuse::isinf_(" + x[0] + ") && " + x[0] + " < 0)";
    case OpType::isposinf:
      return "(nvfuse::isinf_(" + x[0] + ") && " + x[0] + " > 0)";
    case OpType::isreal:
      return "true";  // complex values never reach generated code
    case OpType::lgamma:
      return fn("lgamma");
    case OpType::log:
      return fn("log");
    case OpType::log10:
      return fn("log10");
    case OpType::log1p:
      return fn("log1p");
    case OpType::log2:
      return fn("log2");
    case OpType::logical_not:
      return "(!static_cast<bool>(" + x[0] + "))";
    case OpType::neg:
      return "(-" + x[0] + ")";
    case OpType::reciprocal:
      return "(" + one + " / " + x[0] + ")";
    case OpType::relu:
      return call("nvfuse::relu", x);
    case OpType::round:  // half to even, as torch.round
      return integral ? x[0] : fn("rint");
    case OpType::rsqrt:
      return fn("rsqrt");
    case OpType::sigmoid:
      return call("nvfuse::sigmoid", x);
    case OpType::sign:
      return is_boolean(math) ? x[0] : call("nvfuse::sign", x);
    case OpType::signbit:
      return call("nvfuse::signbit_", x);
    case OpType::silu:
      return "(" + x[0] + " / (" + one + " + " + call(math_fn("exp", math), {"-" + x[0]}) + "))";
    case OpType::sin:
      return fn("sin");
    case OpType::sinh:
      return fn("sinh");
    case OpType::sqrt:
      return fn("sqrt");
    case OpType::tan:
      return fn("tan");
    case OpType::tanh:
      return fn("tanh");
    case OpType::trunc:
      return integral ? x[0] : fn("trunc");
    case OpType::set:
    case OpType::segment_set:
    case OpType::real:
      return x[0];
    case OpType::imag:
      NVFUSE_ASSERT(false, "imag of a real value reached code generation");
      return "";
    case OpType::add:
      return is_boolean(math) ? binary(x[0], "||", x[1]) : binary(x[0], "+", x[1]);
    case OpType::sub:
      return binary(x[0], "-", x[1]);
    case OpType::mul:
      return is_boolean(math) ? binary(x[0], "&&", x[1]) : binary(x[0], "*", x[1]);
    case OpType::div:  // integers truncate, as C
      return integral && !is_boolean(math) ? call("nvfuse::div_int", x) : binary(x[0], "/", x[1]);
    case OpType::truediv:
      return binary(x[0], "/", x[1]);
    case OpType::fmod:
    case OpType::mod:  // the sign of the dividend
      return integral ? call("nvfuse::mod_int", x) : fn("fmod");
    case OpType::remainder:  // the sign of the divisor
      return call("nvfuse::remainder", x);
    case OpType::pow:
      return integral ? call("nvfuse::pow_int", x) : fn("pow");
    case OpType::atan2:
      return fn("atan2");
    case OpType::maximum:
      return call("nvfuse::maximum", x);
    case OpType::minimum:
      return call("nvfuse::minimum", x);
    case OpType::eq:
      return binary(x[0], "==", x[1]);
    case OpType::ne:
      return binary(x[0], "!=", x[1]);
    case OpType::lt:
      return binary(x[0], "<", x[1]);
    case OpType::le:
      return binary(x[0], "<=", x[1]);
    case OpType::gt:
      return binary(x[0], ">", x[1]);
    case OpType::ge:
      return binary(x[0], ">=", x[1]);
    case OpType::logical_and:
      return "(static_cast<bool>(" + x[0] + ") && static_cast<bool>(" + x[1] + "))";
    case OpType::logical_or:
      return "(static_cast<bool>(" + x[0] + ") || static_cast<bool>(" + x[1] + "))";
    case OpType::bitwise_and:
      return binary(x[0], "&", x[1]);
    case OpType::bitwise_or:
      return binary(x[0], "|", x[1]);
    case OpType::bitwise_xor:
      return binary(x[0], "^", x[1]);
    case OpType::bitwise_left_shift:
      return call("nvfuse::shift_left", x);
    case OpType::bitwise_right_shift:
      return call("nvfuse::shift_right", x);
    case OpType::gcd:
      return call("nvfuse::gcd", x);
    case OpType::nextafter:
      return fn("nextafter");
    case OpType::add_alpha:  // arg1 + alpha * arg2
      return "(" + x[0] + " + " + x[2] + " * " + x[1] + ")";
    case OpType::sub_alpha:
      return "(" + x[0] + " - " + x[2] + " * " + x[1] + ")";
    case OpType::where:
      return "(" + x[0] + " ? " + x[1] + " : " + x[2] + ")";
    case OpType::lerp:
      return call("nvfuse::lerp", x);
    case OpType::clamp:
      return call("nvfuse::clamp", x);
    case OpType::threshold:  // torch.threshold: x <= threshold ? value : x
      return "(" + x[0] + " <= " + x[1] + " ? " + x[2] + " : " + x[0] + ")";
    case OpType::addcmul:  // arg + value * tensor1 * tensor2
      return "(" + x[0] + " + " + x[3] + " * " + x[1] + " * " + x[2] + ")";
    case OpType::ceil_div:
      return call("nvfuse::ceil_div", x);
  }
  NVFUSE_ASSERT(false, "no CUDA for op ", name_of(op));
  return "";
}

}  // namespace nvfuse
