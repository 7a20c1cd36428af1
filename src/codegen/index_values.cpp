#include "codegen/index_values.h"

#include <algorithm>

#include "codegen/emit_op.h"
#include "codegen/kernel_args.h"
#include "ir/scalar.h"

namespace nvfuse {

std::string scalar_text_as(const Val* s, DataType dtype, const ArgText& arg_text) {
  const DataType math = math_dtype_of(dtype);
  std::string text;
  if (s->is<Scalar>() && s->as<Scalar>()->is_constant()) {
    text = emit_constant(s->as<Scalar>()->value(), math);
  } else {
    text = "nvfuse::cast<" + cuda_type_of(math) + ">(" + arg_text(s) + ")";
  }
  return math == dtype ? text : "nvfuse::cast<" + cuda_type_of(dtype) + ">(" + text + ")";
}

std::string int64_text(const Val* s, const ArgText& arg_text) {
  if (auto value = s->as<Scalar>()->constant_int()) {
    return "nvfuse::int64(" + std::to_string(*value) + "LL)";
  }
  return "nvfuse::int64(" + arg_text(s) + ")";
}

std::string iota_value(const IotaOp& expr, const std::string& index, const ArgText& arg_text) {
  // start + i * step in Int64 or Double (as the reference), rounded step by
  // step so the GPU gives the CPU's values.
  const DataType dtype = expr.output(0)->dtype();
  const std::string value = is_integral(dtype) ? int64_text(expr.input(1), arg_text) +
          " + nvfuse::int64(" + index + ") * " + int64_text(expr.input(2), arg_text)
                                               : "__dadd_rn(__dmul_rn(double(" + index + "), " +
          scalar_text_as(expr.input(2), DataType::Double, arg_text) + "), " +
          scalar_text_as(expr.input(1), DataType::Double, arg_text) + ")";
  return "nvfuse::cast<" + cuda_type_of(dtype) + ">(" + value + ")";
}

void add_drawn_seed_args(
    KernelArgLayout& layout, size_t first_value, size_t drawn, bool graph_rng) {
  if (drawn > 0 && graph_rng) {
    layout.add({ArgField::kGraphRng, 0, 1, DataType::Null, "graph_rng_seed"});
    layout.add({ArgField::kGraphRng, 1, 1, DataType::Null, "graph_rng_offset"});
  }
  for (size_t r = 0; r < drawn; ++r) {
    const int k = static_cast<int>(first_value + 2 * r);
    layout.add({ArgField::kValue, k, 1, DataType::Int, "seed_" + std::to_string(r)});
    layout.add({ArgField::kValue, k + 1, 1, DataType::Int, "offset_" + std::to_string(r)});
  }
}

PhiloxKey drawn_philox_key(
    const std::vector<const RngOp*>& drawn, const RngOp& rng, bool graph_rng) {
  const std::string k = std::to_string(std::find(drawn.begin(), drawn.end(), &rng) - drawn.begin());
  if (graph_rng) {
    return {"nvfuse_philox::drawn_seed(args.graph_rng_seed, args.seed_" + k + ")",
        "nvfuse_philox::drawn_offset(args.graph_rng_offset, args.offset_" + k + ")"};
  }
  return {"nvfuse::uint64(args.seed_" + k + ")", "nvfuse::uint64(args.offset_" + k + ")"};
}

namespace {

// Input `i` of a random op: the kernel's argument where the op passes it
// by value (RngOp::passes_by_value), else its constant or argument.
std::string parameter_text(const RngOp& expr, size_t i, const ArgText& arg_text) {
  if (expr.passes_by_value(i)) {
    return "nvfuse::cast<double>(" + arg_text(expr.input(i)) + ")";
  }
  return scalar_text_as(expr.input(i), DataType::Double, arg_text);
}

std::string seed_text(const RngOp& expr, size_t i, const ArgText& arg_text) {
  if (expr.passes_by_value(i)) {
    return "nvfuse::uint64(nvfuse::int64(" + arg_text(expr.input(i)) + "))";
  }
  return "nvfuse::uint64(" + int64_text(expr.input(i), arg_text) + ")";
}

}  // namespace

PhiloxKey philox_key_of(const RngOp& expr, const ArgText& arg_text, const PhiloxKey& drawn) {
  if (!expr.has_explicit_seed()) {
    return drawn;
  }
  return {seed_text(expr, 2, arg_text), seed_text(expr, 3, arg_text)};
}

bool uses_unit_floats(const RngOp& expr) {
  return !expr.is_normal() && expr.output(0)->dtype() != DataType::Double;
}

bool is_unit_uniform(const RngOp& expr) { return expr.is_unit_uniform(); }

std::string random_value(const RngOp& expr, const std::string& index, const PhiloxKey& key,
    const std::string& unit, const ArgText& arg_text) {
  const std::string a = parameter_text(expr, 0, arg_text);
  const std::string b = parameter_text(expr, 1, arg_text);
  const std::string type = cuda_type_of(expr.output(0)->dtype());
  const std::string at = key.seed + ", " + key.offset + ", " + index;
  std::string value;
  if (is_unit_uniform(expr)) {
    // uniform(0, 1), as rand_like and dropout draw it: 0 + 1 * u is u
    // exactly, but NVRTC keeps the __fadd_rn/__fmul_rn below as written.
    value = unit;
  } else if (uses_unit_floats(expr)) {
    // low + span * u, rounded step by step as on the host.
    value = "__fadd_rn(float(" + a + "), __fmul_rn(float(" + b + " - " + a + "), " + unit + "))";
  } else if (!expr.is_normal()) {
    value = "__dadd_rn(" + a + ", __dmul_rn(" + b + " - " + a + ", nvfuse_philox::uniform_double(" +
        at + ")))";
  } else if (expr.output(0)->dtype() == DataType::Double) {
    value = "nvfuse_philox::normal_double(" + at + ", " + a + ", " + b + ")";
  } else {
    value = "nvfuse_philox::normal_float(" + at + ", float(" + a + "), float(" + b + "))";
  }
  return "nvfuse::cast<" + type + ">(" + value + ")";
}

}  // namespace nvfuse
