#include "codegen/expr_statement.h"

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

}  // namespace

std::string expr_value(const Expr& expr, const std::function<std::string(const Val*)>& text_of) {
  const Val* out = expr.output(0);
  const std::string type = cuda_type_of(out->dtype());
  std::string value;
  if (expr.is<PointwiseOp>()) {
    const auto& op = *expr.as<PointwiseOp>();
    const DataType math = math_dtype_of(compute_type_of(op));
    std::vector<std::string> operands;
    for (size_t i = 0; i < op.inputs().size(); ++i) {
      const bool condition = op.op() == OpType::where && i == 0;
      operands.push_back(operand(op.input(i), condition ? DataType::Bool : math, text_of));
    }
    value = emit_pointwise(op.op(), operands, math);
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
