#include "codegen/coordinate_values.h"

#include "codegen/emit_op.h"
#include "codegen/expr_statement.h"
#include "codegen/kernel_args.h"
#include "ir/errors.h"
#include "ir/printer.h"

namespace nvfuse {

namespace {

std::string join(const std::vector<std::string>& parts) {
  std::string text;
  for (size_t i = 0; i < parts.size(); ++i) {
    text += (i ? "," : "") + parts[i];
  }
  return text;
}

const TensorView* tensor_input(const Expr& expr, size_t i) {
  return expr.input(i)->as<TensorView>();
}

Scalar* extent_of(const Val* tv, int64_t axis) {
  return tv->as<TensorView>()->logical()[axis]->logical_extent();
}

}  // namespace

CoordinateValues::CoordinateValues(
    const Fusion& fusion,
    std::function<std::string(const Val*)> arg_text,
    std::function<std::pair<std::string, std::string>(const RngOp&)> seed_of)
    : fusion_(fusion),
      arg_text_(std::move(arg_text)),
      seed_of_(std::move(seed_of)),
      scopes_(1) {}

void CoordinateValues::line(const std::string& text) {
  code_ << std::string(2 * indent_, ' ') << text << "\n";
}

void CoordinateValues::open_scope() {
  scopes_.emplace_back();
  ++indent_;
}

void CoordinateValues::close_scope() {
  scopes_.pop_back();
  --indent_;
}

std::string CoordinateValues::declare(
    const std::string& type,
    const std::string& value,
    const std::string& comment) {
  const std::string name = "v" + std::to_string(next_name_++);
  line("const " + type + " " + name + " = " + value + ";" +
       (comment.empty() ? "" : "  // " + comment));
  return name;
}

std::string CoordinateValues::scalar_as(const Val* s, DataType dtype) const {
  const DataType math = math_dtype_of(dtype);
  std::string text;
  if (s->is<Scalar>() && s->as<Scalar>()->is_constant()) {
    text = emit_constant(s->as<Scalar>()->value(), math);
  } else {
    text = "nvfuse::cast<" + cuda_type_of(math) + ">(" + arg_text_(s) + ")";
  }
  return math == dtype ? text
                       : "nvfuse::cast<" + cuda_type_of(dtype) + ">(" + text + ")";
}

std::string CoordinateValues::int64_of(const Val* s) const {
  if (auto value = s->as<Scalar>()->constant_int()) {
    return "nvfuse::int64(" + std::to_string(*value) + "LL)";
  }
  return "nvfuse::int64(" + arg_text_(s) + ")";
}

std::string CoordinateValues::checked_index(
    const std::string& value,
    const Val* extent) {
  return declare_index(
      "Index(nvfuse::index_in_range(nvfuse::int64(" + value + "), " +
      int64_of(extent) + "))");
}

std::string CoordinateValues::offset_of(
    const TensorView* tv,
    const std::vector<std::string>& coords) const {
  std::string text;
  for (int64_t axis = 0; axis < tv->rank(); ++axis) {
    if (tv->logical()[axis]->is_broadcast()) {
      continue;
    }
    text += (text.empty() ? "" : " + ") + coords[axis] + " * args.stride_" +
        name_of_value(tv) + "[" + std::to_string(axis) + "]";
  }
  return text.empty() ? "0" : text;
}

std::string CoordinateValues::value_at(
    const TensorView* tv,
    std::vector<std::string> coords) {
  NVFUSE_ASSERT(
      static_cast<int64_t>(coords.size()) == tv->rank(), tv->name(),
      " read with ", coords.size(), " coordinates");
  for (int64_t axis = 0; axis < tv->rank(); ++axis) {
    if (tv->logical()[axis]->is_broadcast()) {
      coords[axis] = "0";  // every element of a size-1 axis is the one
    }
  }
  const std::string key = name_of_value(tv) + "@" + join(coords);
  for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope) {
    auto found = scope->find(key);
    if (found != scope->end()) {
      return found->second;
    }
  }
  const std::string name = compute(tv, coords);
  scopes_.back()[key] = name;
  return name;
}

std::string CoordinateValues::compute(
    const TensorView* tv,
    const std::vector<std::string>& coords) {
  const std::string type = cuda_type_of(tv->dtype());
  if (fusion_.is_input(tv)) {
    if (tv->is_cpu_scalar()) {
      return arg_text_(tv);
    }
    return declare(
        type, "args." + name_of_value(tv) + "[" + offset_of(tv, coords) + "]",
        "load " + tv->name());
  }
  const Expr& def = *tv->definition();
  const std::string comment = print_expr(def);
  std::vector<std::string> in = coords;
  switch (def.kind()) {
    case ExprKind::PointwiseOp:
    case ExprKind::CastOp:
    case ExprKind::BroadcastOp:
    case ExprKind::ExpandOp:
      return elementwise(def, coords);
    case ExprKind::PadOp:
      return pad(*def.as<PadOp>(), coords);
    case ExprKind::CatOp:
      return cat(*def.as<CatOp>(), coords);
    case ExprKind::SliceOp:
      return value_at(tensor_input(def, 0), slice_coords(*def.as<SliceOp>(), coords));
    case ExprKind::PermuteOp: {
      const auto& dims = def.as<PermuteOp>()->dims();
      for (size_t i = 0; i < dims.size(); ++i) {
        in[dims[i]] = coords[i];
      }
      return value_at(tensor_input(def, 0), in);
    }
    case ExprKind::SqueezeOp:
      for (int64_t d : def.as<SqueezeOp>()->dims()) {
        in.insert(in.begin() + d, "0");
      }
      return value_at(tensor_input(def, 0), in);
    case ExprKind::SelectOp: {
      const int64_t dim = def.as<SelectOp>()->dim();
      in.insert(
          in.begin() + dim,
          checked_index(int64_of(def.input(1)), extent_of(def.input(0), dim)));
      return value_at(tensor_input(def, 0), in);
    }
    case ExprKind::IndexSelectOp: {
      const int64_t dim = def.as<IndexSelectOp>()->dim();
      return indexed(def, tensor_input(def, 1), {coords[dim]}, coords, dim);
    }
    case ExprKind::GatherOp:
      return indexed(def, tensor_input(def, 1), coords, coords,
                     def.as<GatherOp>()->dim());
    case ExprKind::EmbeddingFwdOp: {
      // out[..., j] = weight[indices[...], j]
      std::vector<std::string> rows(coords.begin(), coords.end() - 1);
      const std::string index = value_at(tensor_input(def, 0), rows);
      const std::string row = checked_index(index, extent_of(def.input(1), 0));
      return value_at(tensor_input(def, 1), {row, coords.back()});
    }
    case ExprKind::TriuOp: {
      const std::string value = value_at(tensor_input(def, 0), coords);
      const size_t r = coords.size();
      return declare(
          type,
          "(nvfuse::int64(" + coords[r - 1] + ") - nvfuse::int64(" +
              coords[r - 2] + ") >= " + int64_of(def.input(1)) + ") ? " +
              value + " : nvfuse::cast<" + type + ">(0)",
          comment);
    }
    case ExprKind::FullOp:
      return declare(type, scalar_as(def.input(0), tv->dtype()), comment);
    case ExprKind::IotaOp: {
      // start + i * step in Int64 or Double (as the reference), rounded
      // step by step so the GPU gives the CPU's values.
      const bool integral = is_integral(tv->dtype());
      const std::string i = coords[0];
      const std::string value = integral
          ? int64_of(def.input(1)) + " + nvfuse::int64(" + i + ") * " +
              int64_of(def.input(2))
          : "__dadd_rn(__dmul_rn(double(" + i + "), " +
              scalar_as(def.input(2), DataType::Double) + "), " +
              scalar_as(def.input(1), DataType::Double) + ")";
      return declare(type, "nvfuse::cast<" + type + ">(" + value + ")", comment);
    }
    case ExprKind::RngOp:
      return random(*def.as<RngOp>(), coords);
    default:
      NVFUSE_ASSERT(false, "the coordinate kernel cannot compute ", comment);
      return "";
  }
}

std::string CoordinateValues::elementwise(
    const Expr& expr,
    const std::vector<std::string>& coords) {
  std::unordered_map<const Val*, std::string> names;
  for (const Val* v : expr.inputs()) {
    if (!v->is<TensorView>()) {
      continue;
    }
    const auto* operand = v->as<TensorView>();
    std::vector<std::string> at;
    if (expr.is<BroadcastOp>()) {
      const auto& is_new = expr.as<BroadcastOp>()->is_broadcast_dim();
      for (size_t i = 0; i < is_new.size(); ++i) {
        if (!is_new[i]) {
          at.push_back(coords[i]);
        }
      }
    } else if (operand->rank() != 0) {
      at = coords;
    }
    names[v] = value_at(operand, at);
  }
  const std::string value = expr_value(expr, [&](const Val* v) {
    return v->is<TensorView>() ? names.at(v) : arg_text_(v);
  });
  return declare(cuda_type_of(expr.output(0)->dtype()), value, print_expr(expr));
}

std::vector<std::string> CoordinateValues::slice_coords(
    const SliceOp& expr,
    const std::vector<std::string>& coords) {
  std::vector<std::string> in;
  for (size_t axis = 0; axis < coords.size(); ++axis) {
    const Val* start = expr.input(1 + 3 * axis);
    const int64_t step = *expr.input(3 + 3 * axis)->as<Scalar>()->constant_int();
    std::string at = coords[axis];
    if (step != 1) {
      at = at + " * " + std::to_string(step);
    }
    if (!start->as<Scalar>()->is_constant_int(0)) {
      const std::string first = declare_index(
          "Index(nvfuse::normalized_index(" + int64_of(start) + ", " +
          int64_of(extent_of(expr.input(0), static_cast<int64_t>(axis))) + "))");
      at = "(" + first + " + " + at + ")";
    }
    in.push_back(at);
  }
  return in;
}

std::string CoordinateValues::pad(
    const PadOp& expr,
    const std::vector<std::string>& coords) {
  const TensorView* operand = tensor_input(expr, 0);
  std::vector<std::string> in;
  std::string inside;
  for (size_t axis = 0; axis < coords.size(); ++axis) {
    const Val* before = expr.input(2 + 2 * axis);
    const Val* after = expr.input(3 + 2 * axis);
    if (before->as<Scalar>()->is_constant_int(0) &&
        after->as<Scalar>()->is_constant_int(0)) {
      in.push_back(coords[axis]);
      continue;
    }
    const std::string at =
        declare_index(coords[axis] + " - Index(" + int64_of(before) + ")");
    inside += std::string(inside.empty() ? "" : " && ") + at + " >= 0 && " +
        at + " < Index(" +
        int64_of(extent_of(operand, static_cast<int64_t>(axis))) + ")";
    in.push_back(at);
  }
  const std::string type = cuda_type_of(expr.output(0)->dtype());
  const std::string name = "v" + std::to_string(next_name_++);
  line(type + " " + name + " = " + scalar_as(expr.input(1), expr.output(0)->dtype()) +
       ";  // " + print_expr(expr));
  line("if (" + (inside.empty() ? std::string("true") : inside) + ") {");
  open_scope();
  line(name + " = " + value_at(operand, in) + ";");
  close_scope();
  line("}");
  return name;
}

std::string CoordinateValues::cat(
    const CatOp& expr,
    const std::vector<std::string>& coords) {
  const int64_t dim = expr.dim();
  const std::string type = cuda_type_of(expr.output(0)->dtype());
  const std::string name = "v" + std::to_string(next_name_++);
  line(type + " " + name + ";  // " + print_expr(expr));
  // Where each part starts along `dim`, declared before the branches.
  const size_t count = expr.inputs().size();
  std::vector<std::string> starts = {"Index(0)"};
  for (size_t k = 0; k + 1 < count; ++k) {
    starts.push_back(declare_index(
        starts.back() + " + Index(" +
        int64_of(extent_of(expr.input(k), dim)) + ")"));
  }
  for (size_t k = 0; k < count; ++k) {
    if (k + 1 < count) {
      line(std::string(k == 0 ? "" : "} else ") + "if (" + coords[dim] +
           " < " + starts[k + 1] + ") {");
    } else {
      line(count == 1 ? "{" : "} else {");
    }
    open_scope();
    std::vector<std::string> in = coords;
    in[dim] = k == 0 ? coords[dim] : "(" + coords[dim] + " - " + starts[k] + ")";
    line(name + " = " + value_at(tensor_input(expr, k), in) + ";");
    close_scope();
  }
  line("}");
  return name;
}

std::string CoordinateValues::indexed(
    const Expr& expr,
    const TensorView* index,
    const std::vector<std::string>& index_coords,
    const std::vector<std::string>& coords,
    int64_t dim) {
  const std::string value = value_at(index, index_coords);
  std::vector<std::string> in = coords;
  in[dim] = checked_index(value, extent_of(expr.input(0), dim));
  return value_at(tensor_input(expr, 0), in);
}

std::string CoordinateValues::random(
    const RngOp& expr,
    const std::vector<std::string>& coords) {
  const auto* out = expr.output(0)->as<TensorView>();
  // The element's position in the tensor's row-major order: what the
  // reference evaluator numbers it.
  std::string linear = "nvfuse::uint64(0)";
  for (size_t axis = 0; axis < coords.size(); ++axis) {
    linear = "(" + linear + " * nvfuse::uint64(" +
        int64_of(extent_of(out, static_cast<int64_t>(axis))) +
        ") + nvfuse::uint64(" + coords[axis] + "))";
  }
  const std::string i = declare("nvfuse::uint64", linear);
  std::string seed;
  std::string offset;
  if (expr.has_explicit_seed()) {
    seed = "nvfuse::uint64(" + int64_of(expr.input(2)) + ")";
    offset = "nvfuse::uint64(" + int64_of(expr.input(3)) + ")";
  } else {
    std::tie(seed, offset) = seed_of_(expr);
  }
  const std::string a = scalar_as(expr.input(0), DataType::Double);
  const std::string b = scalar_as(expr.input(1), DataType::Double);
  const bool is_double = out->dtype() == DataType::Double;
  std::string value;
  if (!expr.is_normal()) {
    // low + span * u, rounded step by step as on the host.
    value = is_double
        ? "__dadd_rn(" + a + ", __dmul_rn(" + b + " - " + a +
            ", nvfuse_philox::uniform_double(" + seed + ", " + offset + ", " +
            i + ")))"
        : "__fadd_rn(float(" + a + "), __fmul_rn(float(" + b + " - " + a +
            "), nvfuse_philox::uniform_float(" + seed + ", " + offset + ", " +
            i + ")))";
  } else if (is_double) {
    const std::string w = declare(
        "nvfuse_philox::Words",
        "nvfuse_philox::block(" + seed + ", " + offset + ", " + i + ")");
    value = a + " + " + b + " * sqrt(-2.0 * log(1.0 - nvfuse_philox::unit_double(" +
        w + ".w[0], " + w + ".w[1]))) * cos(6.283185307179586 * "
        "nvfuse_philox::unit_double(" + w + ".w[2], " + w + ".w[3]))";
  } else {
    // Box-Muller on words 2(i % 2), 2(i % 2) + 1 of block i / 2.
    const std::string w = declare(
        "nvfuse_philox::Words",
        "nvfuse_philox::block(" + seed + ", " + offset + ", " + i + " / 2)");
    const std::string pair = declare("int", "int(" + i + " % 2) * 2");
    value = "float(" + a + ") + float(" + b +
        ") * sqrtf(-2.0f * logf(1.0f - nvfuse_philox::unit_float(" + w +
        ".w[" + pair + "]))) * cosf(float(6.283185307179586) * "
        "nvfuse_philox::unit_float(" + w + ".w[" + pair + " + 1]))";
  }
  const std::string type = cuda_type_of(out->dtype());
  return declare(type, "nvfuse::cast<" + type + ">(" + value + ")",
                 print_expr(expr));
}

}  // namespace nvfuse
