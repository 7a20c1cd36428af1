#include "ir/printer.h"

#include <sstream>

#include "ir/fusion.h"

namespace nvfuse {

std::string print_operand(const Val& val) {
  switch (val.val_kind()) {
    case ValKind::kTensorView:
      return val.as<TensorView>()->name();
    case ValKind::kIterDomain:
      return val.as<IterDomain>()->to_string();
    case ValKind::kScalar:
      return val.as<Scalar>()->to_string();
  }
  return "?";
}

std::string print_val(const Val& val) {
  switch (val.val_kind()) {
    case ValKind::kTensorView:
      return val.as<TensorView>()->to_string();
    case ValKind::kIterDomain:
      return val.as<IterDomain>()->to_string();
    case ValKind::kScalar:
      return val.as<Scalar>()->to_string() + "_" + name_of(val.dtype());
  }
  return "?";
}

std::string print_expr(const Expr& expr) {
  std::ostringstream ss;
  for (size_t i = 0; i < expr.outputs().size(); ++i) {
    ss << (i ? ", " : "") << print_val(*expr.output(i));
  }
  ss << " = " << expr.op_name() << "(";
  bool first = true;
  for (const Val* in : expr.inputs()) {
    ss << (first ? "" : ", ") << print_operand(*in);
    first = false;
  }
  for (const Attribute& attr : expr.attributes()) {
    if (attr.name == "op") {
      continue;  // already the printed op name
    }
    ss << (first ? "" : ", ") << attr.name << "=" << to_string(attr.value);
    first = false;
  }
  ss << ")";
  return ss.str();
}

std::string print_fusion(const Fusion& fusion) {
  std::ostringstream ss;
  ss << "Inputs:\n";
  for (const Val* in : fusion.inputs()) {
    ss << "  " << print_val(*in) << "\n";
  }
  ss << "Exprs:\n";
  for (const Expr* expr : fusion.exprs()) {
    ss << "  " << print_expr(*expr) << "\n";
  }
  ss << "Outputs:\n";
  for (const Val* out : fusion.outputs()) {
    ss << "  " << print_operand(*out);
    if (const TensorView* alias = fusion.aliased_input(out)) {
      ss << " (written in place into " << alias->name() << ")";
    } else if (out->is<TensorView>() && out->as<TensorView>()->domain().has_allocation()) {
      ss << " allocation=[";
      const auto& alloc = out->as<TensorView>()->domain().allocation();
      for (size_t i = 0; i < alloc.size(); ++i) {
        ss << (i ? ", " : "") << alloc[i]->to_string();
      }
      ss << "]";
    }
    ss << "\n";
  }
  return ss.str();
}

}  // namespace nvfuse
