// Row maxima and minima over half-type lanes taken on packed pairs
// (nvfuse::PackedExtreme in device_reduction.cuh): which reductions qualify,
// and the text that declares, feeds and folds their packed accumulators.
// The reduction's float accumulator still takes the folded value, so that
// the lanes, block and cluster reduce it as before.

#include "codegen/reduction_generator.h"

#include <sstream>

#include "codegen/kernel_args.h"

namespace nvfuse {

namespace {

bool is_half_type(DataType dtype) { return dtype == DataType::BFloat16 || dtype == DataType::Half; }

}  // namespace

const TensorView* ReductionGenerator::packed_source(const Expr* r, const TensorSet& loads) const {
  if (!r->is<ReductionOp>() || math_dtype_of(r->output(0)->dtype()) != DataType::Float) {
    return nullptr;
  }
  const OpType op = r->as<ReductionOp>()->op();
  if (op != OpType::maximum && op != OpType::minimum) {
    return nullptr;
  }
  // The reduced values: the half-type input itself, or its cast to float.
  const Val* value = r->input(0);
  if (const Expr* def = value->definition();
      def != nullptr && def->is<CastOp>() && value->dtype() == DataType::Float) {
    value = def->input(0);
  }
  if (!is_half_type(value->dtype()) || !value->is<TensorView>()) {
    return nullptr;
  }
  const auto* tv = value->as<TensorView>();
  if (!loads.count(tv) || !is_kernel_input(tv) || per_row(tv) || per_column(tv) || carried(tv)) {
    return nullptr;
  }
  // Whole vectors of the row's own lanes (a broadcast input has one lane).
  const size_t t = slot_of(tv);
  if (access(t) == InnerAccess::kBroadcast || width_of(t) % 2 != 0) {
    return nullptr;
  }
  return tv;
}

ReductionGenerator::PackedReductions ReductionGenerator::packed_reductions(
    const std::vector<const Expr*>& reductions, const TensorSet& loads) const {
  PackedReductions packed;
  for (const Expr* r : reductions) {
    if (const TensorView* source = packed_source(r, loads)) {
      packed.emplace_back(r, source);
    }
  }
  return packed;
}

std::string ReductionGenerator::packed_lines(
    const PackedReductions& packed, PackedPart part, const std::string& indent) const {
  std::ostringstream ss;
  for (const auto& [r, source] : packed) {
    ss << indent;
    switch (part) {
      case PackedPart::kDeclare: {
        const bool max = r->as<ReductionOp>()->op() == OpType::maximum;
        ss << "nvfuse::PackedExtreme<" << (max ? "true" : "false") << ", "
           << cuda_type_of(source->dtype()) << "> " << packed_name(r) << ";  // on packed pairs\n";
        break;
      }
      case PackedPart::kAdd:
        ss << packed_name(r) << ".add(in_" << name_of_value(source) << "[k]);\n";
        break;
      case PackedPart::kFold:
        ss << acc_name(r) << " = " << op_type(r) << "()(" << acc_name(r) << ", " << packed_name(r)
           << ".result());\n";
        break;
    }
  }
  return ss.str();
}

}  // namespace nvfuse
