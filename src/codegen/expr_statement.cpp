#include "codegen/expr_statement.h"

#include <optional>

#include "codegen/emit_op.h"
#include "codegen/kernel_args.h"
#include "ir/printer.h"
#include "ir/type_promotion.h"

namespace nvfuse {

std::string name_of_value(const Val* v) {
  if (v->is<TensorView>()) {
    return "t" + std::to_string(v->number());
  }
  if (v->as<Scalar>()->is_constant()) {  // a constant passed by value
    return "c" + std::to_string(v->number());
  }
  return v->as<Scalar>()->to_string();
}

namespace {

// `v` as an expression of math type `math`.
std::string operand(
    const Val* v, DataType math, const std::function<std::string(const Val*)>& text_of) {
  if (v->is<Scalar>() && v->as<Scalar>()->is_constant()) {
    return emit_constant(v->as<Scalar>()->value(), math);
  }
  const std::string text = text_of(v);
  if (v->dtype() == math) {
    return text;
  }
  return "nvfuse::cast<" + cuda_type_of(math) + ">(" + text + ")";
}

// torch's pow by a number it computes without pow (its CUDA and CPU
// kernels alike): x*x for 2, x*x*x for 3, 1/(x*x) for -2, and sqrt, rsqrt
// and reciprocal for 0.5, -0.5 and -1. powf differs from those by an ulp,
// which an ill-conditioned op after it (a remainder of the cube) shows.
// torch multiplies in the tensor's own type, so for half precision each
// product is rounded to it (`out`), as c10::Half and c10::BFloat16 round.
std::optional<std::string> pow_by_constant(
    const PointwiseOp& op, const std::string& base, DataType math, DataType out) {
  const auto in_out_type = [&](const std::string& product) {
    return out == math ? product
                       : "nvfuse::cast<" + cuda_type_of(math) + ">(nvfuse::cast<" +
            cuda_type_of(out) + ">(" + product + "))";
  };
  if (op.op() != OpType::pow || !is_floating(math)) {
    return std::nullopt;
  }
  const Val* exponent = op.input(1);
  if (!exponent->is<Scalar>() || !exponent->as<Scalar>()->is_constant() ||
      exponent->as<Scalar>()->value().is_complex()) {
    return std::nullopt;
  }
  const double e = exponent->as<Scalar>()->value().as_double();
  const std::string square = in_out_type("(" + base + " * " + base + ")");
  if (e == 2.0) {
    return square;
  }
  if (e == 3.0) {
    return in_out_type("(" + square + " * " + base + ")");
  }
  if (e == -2.0) {
    return "(" + emit_constant(ScalarValue(1.0), math) + " / " + square + ")";
  }
  const OpType special = e == 0.5 ? OpType::sqrt
      : e == -0.5                 ? OpType::rsqrt
      : e == -1.0                 ? OpType::reciprocal
                                  : OpType::pow;
  if (special == OpType::pow) {
    return std::nullopt;
  }
  return emit_pointwise(special, {base}, math);
}

// A floating-point division by a constant multiplies by the constant's
// reciprocal in the math type (folded at compile time), as torch's CUDA
// kernel does for a CPU-scalar divisor (div_true_kernel_cuda: a *
// (opmath(1) / opmath(b))): torch's bits, and one multiply an element
// where a correctly rounded division is a Newton step and a branch around
// a slow path. A symbolic divisor still divides: its reciprocal, taken in
// the kernel, made a layer norm backward's 1,024-thread rows spill.
std::optional<std::string> divide_by_constant(
    const PointwiseOp& op, const std::vector<std::string>& operands, DataType math) {
  if ((op.op() != OpType::div && op.op() != OpType::truediv) || !is_floating(math)) {
    return std::nullopt;
  }
  const Val* divisor = op.input(1);
  if (!divisor->is<Scalar>() || !divisor->as<Scalar>()->is_constant()) {
    return std::nullopt;
  }
  const std::string one = emit_constant(ScalarValue(1.0), math);
  return "(" + operands[0] + " * (" + one + " / " + operands[1] + "))";
}

// Ops whose result is exact in their operands' own type run in it: a where
// between two computed values picks one as it is (a bf16 select needs no
// float round trip: three instructions a lane, nine a window in a max
// pool's running maximum), and a maximum, minimum or relu of half-type
// values compares them as they are (device_runtime.cuh).
bool exact_in_its_type(const PointwiseOp& op) {
  const DataType dtype = op.output(0)->dtype();
  const bool half_type = dtype == DataType::BFloat16 || dtype == DataType::Half;
  size_t first_value = 0;
  switch (op.op()) {
    case OpType::where:
      first_value = 1;
      break;
    case OpType::maximum:
    case OpType::minimum:
    case OpType::relu:
      if (!half_type) {
        return false;
      }
      break;
    default:
      return false;
  }
  for (size_t i = first_value; i < op.inputs().size(); ++i) {
    const Val* value = op.input(i);
    if (!value->is<TensorView>() || value->dtype() != dtype) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::string expr_value(const Expr& expr, const std::function<std::string(const Val*)>& text_of) {
  const Val* out = expr.output(0);
  const std::string type = cuda_type_of(out->dtype());
  std::string value;
  if (expr.is<PointwiseOp>()) {
    const auto& op = *expr.as<PointwiseOp>();
    const DataType math = exact_in_its_type(op) ? out->dtype() : math_dtype_of(compute_type_of(op));
    std::vector<std::string> operands;
    for (size_t i = 0; i < op.inputs().size(); ++i) {
      const bool condition = op.op() == OpType::where && i == 0;
      operands.push_back(operand(op.input(i), condition ? DataType::Bool : math, text_of));
    }
    std::optional<std::string> special = pow_by_constant(op, operands[0], math, out->dtype());
    if (!special.has_value()) {
      special = divide_by_constant(op, operands, math);
    }
    value = special.has_value() ? *special : emit_pointwise(op.op(), operands, math);
    if (out->dtype() != math) {
      value = "nvfuse::cast<" + type + ">(" + value + ")";
    }
  } else if (expr.is<CastOp>()) {
    value = "nvfuse::cast<" + type + ">(" +
        operand(expr.input(0), expr.input(0)->dtype(), text_of) + ")";
  } else {
    // Broadcasts and expands change indexing, which the loads already did;
    // element by element the value is the same.
    value = operand(expr.input(0), expr.input(0)->dtype(), text_of);
  }
  return value;
}

std::string expr_statement(
    const Expr& expr, const std::function<bool(const Val*)>& is_value_input) {
  const Val* out = expr.output(0);
  const std::string value = expr_value(expr, [&](const Val* v) {
    return is_value_input(v) ? "args." + name_of_value(v) : name_of_value(v);
  });
  return "const " + cuda_type_of(out->dtype()) + " " + name_of_value(out) + " = " + value +
      ";  // " + print_expr(expr) + "\n";
}

}  // namespace nvfuse
