// ReductionGenerator's pieces shared by every kernel kind: the Args layout,
// accumulator types and ops, what each phase computes, load/store text.
#include "codegen/reduction_generator.h"

#include <sstream>

#include "codegen/index_values.h"
#include "ir/printer.h"
#include "schedule/coordinate_analysis.h"
#include "schedule/value_signs.h"

namespace nvfuse {

ReductionGenerator::ReductionGenerator(
    const ReductionAnalysis& analysis, const ReductionParams& params)
    : a_(analysis), p_(params) {
  tensors_.insert(tensors_.end(), a_.inputs.begin(), a_.inputs.end());
  const std::vector<const TensorView*> outputs = a_.kernel_outputs();
  tensors_.insert(tensors_.end(), outputs.begin(), outputs.end());
  int cell = 0;
  for (const Expr* r : a_.reductions) {
    first_cell_[r] = cell;
    cell += static_cast<int>(partial_slot_bytes(*r) / 8);
  }
  cells_ = cell;
  build_layout();
  if (p_.carry_exps) {
    // Carried only where its own phase computes it (an exp read in its
    // phase by nothing that phase reduces or writes is not).
    std::vector<const TensorView*> read_again = a_.exps_read_again();
    for (const TensorView* tv : a_.selects_read_again()) {
      read_again.push_back(tv);
    }
    for (const TensorView* tv : read_again) {
      TensorSet loads;
      const std::vector<const Expr*> computed = cone(element_roots(a_.phase_of(tv)), false, &loads);
      if (std::find(computed.begin(), computed.end(), tv->definition()) != computed.end()) {
        carried_.insert(tv);
      }
    }
  }
}

// ---- tensors and names ------------------------------------------------------

void ReductionGenerator::build_layout() {
  layout_.index_32bit = p_.index_32bit;
  for (size_t t = 0; t < tensors_.size(); ++t) {
    layout_.add({ArgField::kTensorPointer, static_cast<int>(t), 1, tensors_[t]->dtype(),
        name_of_value(tensors_[t])});
    layout_.args.back().read_only = !is_output_slot(t);
  }
  for (size_t i = 0; i < a_.value_inputs.size(); ++i) {
    const Val* v = a_.value_inputs[i];
    layout_.add({ArgField::kValue, static_cast<int>(i), 1, v->dtype(), name_of_value(v)});
  }
  add_drawn_seed_args(layout_, a_.value_inputs.size(), a_.drawn_random_ops.size(), p_.graph_rng);
  layout_.add({ArgField::kWorkspace, 0, 1, DataType::Null, "workspace"});
  layout_.add({ArgField::kSemaphores, 0, 1, DataType::Null, "semaphores"});
  layout_.add({ArgField::kNumel, 0, 1, DataType::Null, "rows"});
  layout_.add({ArgField::kWidth, 0, 1, DataType::Null, "width"});
  if (p_.width_generic) {
    layout_.add({ArgField::kLaneShift, 0, 1, DataType::Null, "lane_shift"});
  }
  if (p_.inner_outer) {
    layout_.add({ArgField::kPartialRows, 0, 1, DataType::Null, "partial_rows"});
  }
  layout_.add({ArgField::kExtents, 0, p_.row_rank, DataType::Null, "row_extent"});
  if (uses_row_dividers()) {
    layout_.add({ArgField::kDividers, 0, p_.row_rank - 1, DataType::Null, "row_divider"});
  }
  const std::vector<std::string> walked = walked_names();
  for (size_t t = 0; t < walked.size(); ++t) {
    const std::string& name = walked[t];
    layout_.add({ArgField::kStrides, static_cast<int>(t), p_.row_rank, DataType::Null,
        "row_stride_" + name});
    layout_.add(
        {ArgField::kColStride, static_cast<int>(t), 1, DataType::Null, "col_stride_" + name});
  }
}

// ---- reductions -------------------------------------------------------------

std::string ReductionGenerator::acc_element(const Expr* r) const {
  const DataType out = r->output(r->is<VarMeanOp>() ? 1 : 0)->dtype();
  return cuda_type_of(math_dtype_of(out));
}

std::string ReductionGenerator::op_type(const Expr* r) const {
  const std::string e = acc_element(r);
  if (r->is<VarMeanOp>()) {
    return "nvfuse::WelfordOp<" + e + ">";
  }
  switch (r->as<ReductionOp>()->op()) {
    case OpType::add:
      return "nvfuse::SumOp<" + e + ">";
    case OpType::mul:
      return "nvfuse::ProdOp<" + e + ">";
    case OpType::maximum:
      return "nvfuse::MaxOp<" + e + ">";
    case OpType::minimum:
      return "nvfuse::MinOp<" + e + ">";
    default:
      // A new reduction op must say how the kernel combines it.
      NVFUSE_ASSERT(false, "no reduction kernel combines ", name_of(r->as<ReductionOp>()->op()));
  }
  return "";
}

std::vector<const Expr*> ReductionGenerator::of_phase(
    const std::vector<const Expr*>& reductions, int phase) const {
  std::vector<const Expr*> result;
  for (const Expr* r : reductions) {
    if (input_phase(r) == phase) {
      result.push_back(r);
    }
  }
  return result;
}

std::string ReductionGenerator::column_regions(const std::string& base, const std::string& rows,
    const std::string& width, const std::string& prefix, const std::string& indent) const {
  std::ostringstream ss;
  ss << indent << "Index " << prefix << "offset = 0;\n";
  for (const Expr* r : a_.outer_reductions) {
    const std::string acc = acc_type(r);
    ss << indent << acc << "* " << column_name(r, prefix) << " = reinterpret_cast<" << acc << "*>("
       << base << " + " << prefix << "offset);\n"
       << indent << prefix << "offset += (Index(" << rows << ") * " << width << " * Index(sizeof("
       << acc << ")) + 63) / 64 * 64;\n";
  }
  return ss.str();
}

std::string ReductionGenerator::finalize(
    const Expr* r, const std::string& acc, const std::string& indent) const {
  std::ostringstream ss;
  if (r->is<VarMeanOp>()) {
    const auto* vm = r->as<VarMeanOp>();
    const std::string e = acc_element(r);
    ss << indent << "const " << cuda_type_of(vm->output(0)->dtype()) << " "
       << name_of_value(vm->output(0)) << " = nvfuse::cast<" << cuda_type_of(vm->output(0)->dtype())
       << ">(" << acc << ".m2 / nvfuse::maximum(" << acc << ".count - " << e << "("
       << vm->correction() << "), " << e << "(0)));  // " << print_expr(*r) << "\n"
       << indent << "const " << cuda_type_of(vm->output(1)->dtype()) << " "
       << name_of_value(vm->output(1)) << " = nvfuse::cast<" << cuda_type_of(vm->output(1)->dtype())
       << ">(" << acc << ".mean());\n";
  } else {
    const Val* out = r->output(0);
    ss << indent << "const " << cuda_type_of(out->dtype()) << " " << name_of_value(out)
       << " = nvfuse::cast<" << cuda_type_of(out->dtype()) << ">(" << acc << ");  // "
       << print_expr(*r) << "\n";
  }
  return ss.str();
}

// ---- what each phase computes -----------------------------------------------

std::vector<const Expr*> ReductionGenerator::cone(const std::vector<const TensorView*>& roots,
    bool through_rows, TensorSet* loads, int phase) const {
  ExprSet needed;
  std::vector<const TensorView*> stack(roots.begin(), roots.end());
  TensorSet seen;
  while (!stack.empty()) {
    const TensorView* tv = stack.back();
    stack.pop_back();
    if (!seen.insert(tv).second) {
      continue;
    }
    if (is_kernel_input(tv) || (carried(tv) && a_.phase_of(tv) < phase)) {
      loads->insert(tv);
      continue;
    }
    if ((per_row(tv) && !through_rows) || tv->definition() == nullptr ||
        is_reduction(tv->definition())) {
      continue;
    }
    needed.insert(tv->definition());
    for (const Val* in : tv->definition()->inputs()) {
      if (in->is<TensorView>()) {
        stack.push_back(in->as<TensorView>());
      }
    }
  }
  std::vector<const Expr*> ordered;
  for (const Expr* expr : a_.exprs) {
    if (needed.count(expr)) {
      ordered.push_back(expr);
    }
  }
  return ordered;
}

std::vector<const TensorView*> ReductionGenerator::element_outputs(int phase) const {
  std::vector<const TensorView*> result;
  for (const TensorView* tv : a_.outputs) {
    if (!per_row(tv) && a_.phase_of(tv) == phase) {
      result.push_back(tv);
    }
  }
  return result;
}

std::vector<const TensorView*> ReductionGenerator::element_roots(int phase) const {
  std::vector<const TensorView*> roots = element_outputs(phase);
  for (const Expr* r : reductions_of_phase(phase)) {
    roots.push_back(r->input(0)->as<TensorView>());
  }
  for (const Expr* r : outer_reductions_of_phase(phase)) {
    roots.push_back(r->input(0)->as<TensorView>());
  }
  return roots;
}

std::vector<const Expr*> ReductionGenerator::row_exprs(int phase) const {
  std::vector<const Expr*> result;
  for (const Expr* expr : a_.exprs) {
    const auto* out = expr->output(0)->as<TensorView>();
    if (!is_reduction(expr) && per_row(out) && a_.phase_of(out) == phase) {
      result.push_back(expr);
    }
  }
  return result;
}

// ---- position tensors ---------------------------------------------------------

std::string ReductionGenerator::statement(const Expr* expr, Walk walk) const {
  if (is_position_expr(*expr)) {
    return position_statement(expr, walk);
  }
  if (expr->is<GatherOp>()) {
    return row_gather_statement(expr, walk);
  }
  if (std::string compare = unit_compare(expr, walk); !compare.empty()) {
    return compare;
  }
  if (walk == Walk::kInner && exp_of_nonpositive(expr)) {
    return declaration(expr, "nvfuse::exp_nonpositive(" + name_of_value(expr->input(0)) + ")");
  }
  if (walk == Walk::kInner && divides_by_row_value(expr)) {
    return declaration(expr,
        "divisor_" + name_of_value(expr->input(1)) + ".divide(" + name_of_value(expr->input(0)) +
            ")");
  }
  return expr_statement(*expr, [this](const Val* v) { return is_value_input(v); });
}

std::string ReductionGenerator::declaration(const Expr* expr, const std::string& value) {
  const Val* out = expr->output(0);
  return "const " + cuda_type_of(out->dtype()) + " " + name_of_value(out) + " = " + value +
      ";  // " + print_expr(*expr) + "\n";
}

bool ReductionGenerator::divides_by_row_value(const Expr* expr) const {
  if (!expr->is<PointwiseOp>()) {
    return false;
  }
  const OpType op = expr->as<PointwiseOp>()->op();
  if (op != OpType::truediv && op != OpType::div) {
    return false;
  }
  const DataType dtype = expr->output(0)->dtype();
  const Val* a = expr->input(0);
  const Val* b = expr->input(1);
  return (dtype == DataType::Float || dtype == DataType::Double) && a->is<TensorView>() &&
      b->is<TensorView>() && a->dtype() == dtype && b->dtype() == dtype &&
      !per_row(a->as<TensorView>()) && per_row(b->as<TensorView>());
}

bool ReductionGenerator::exp_of_nonpositive(const Expr* expr) const {
  return expr->is<PointwiseOp>() && expr->as<PointwiseOp>()->op() == OpType::exp &&
      expr->output(0)->dtype() == DataType::Float && expr->input(0)->dtype() == DataType::Float &&
      is_never_positive(expr->input(0));
}

std::string ReductionGenerator::row_divisors(
    const std::vector<const Expr*>& exprs, const std::string& indent) const {
  std::ostringstream ss;
  std::set<std::string> declared;
  for (const Expr* expr : exprs) {
    if (!divides_by_row_value(expr)) {
      continue;
    }
    const std::string divisor = name_of_value(expr->input(1));
    if (declared.insert(divisor).second) {
      // A softmax's sum holds exp(0) = 1: no special-value path to check.
      const char* type =
          is_at_least_one(expr->input(1)) ? "nvfuse::RowReciprocal<" : "nvfuse::RowDivisor<";
      ss << indent << "const " << type << cuda_type_of(expr->output(0)->dtype()) << "> divisor_"
         << divisor << "(" << divisor << ");\n";
    }
  }
  return ss.str();
}

std::string ReductionGenerator::row_gather_statement(const Expr* expr, Walk walk) const {
  NVFUSE_ASSERT(walk == Walk::kRow, "a row gather is computed once per row");
  const std::string source = name_of_value(expr->input(0));
  // The row's offsets are in bounds (row 0 for a row past the end, whose
  // index loaded as 0), and the index is clamped into the row.
  return declaration(expr,
      "args." + source + "[row_" + source + " + Index(nvfuse::index_in_range(nvfuse::int64(" +
          name_of_value(expr->input(1)) + "), args.width)) * args.col_stride_" + source + "]");
}

std::string ReductionGenerator::position_of(
    const TensorView* tv, Walk walk, const std::string& v) const {
  const std::string name = position_name(tv);
  const auto u64 = [](const std::string& text) { return "nvfuse::uint64(" + text + ")"; };
  const std::string row = u64("row_" + name);
  const std::string along_row =
      u64(v) + " * " + u64("args.row_stride_" + name + "[" + std::to_string(p_.row_rank - 1) + "]");
  switch (walk) {
    case Walk::kRow:
      return row;
    case Walk::kInner:
      return "(" + row + " + " + u64("((chunk * kGroups + k) * kLanes + lane) * kVec + " + v) +
          " * " + u64("args.col_stride_" + name) + ")";
    case Walk::kOuter:
      return "(" + row + " + " + u64("r") + " * " + u64("args.col_stride_" + name) + " + " +
          along_row + ")";
    case Walk::kOuterRow:
      break;
  }
  return "(" + row + " + " + along_row + ")";
}

std::vector<const RngOp*> ReductionGenerator::unit_word_ops(
    const std::vector<const Expr*>& exprs) const {
  std::vector<const RngOp*> ops;
  for (const Expr* expr : exprs) {
    if (draws_unit_words(expr)) {
      ops.push_back(expr->as<RngOp>());
    }
  }
  return ops;
}

bool ReductionGenerator::draws_unit_words(const Expr* expr) const {
  return expr->is<RngOp>() && uses_unit_floats(*expr->as<RngOp>()) &&
      (p_.outer || !per_row(expr->output(0)->as<TensorView>()));
}

std::string ReductionGenerator::declare_unit_words(const std::vector<const Expr*>& exprs,
    const std::string& extents, const std::string& indent) const {
  std::ostringstream ss;
  for (const RngOp* rng : unit_word_ops(exprs)) {
    ss << indent << "unsigned int unit_" << name_of_value(rng->output(0)) << extents << ";\n";
  }
  return ss.str();
}

std::string ReductionGenerator::draw_unit_words(const std::vector<const RngOp*>& ops, Walk walk,
    const std::string& slot, const std::string& indent) const {
  std::ostringstream ss;
  const ArgText text = [this](const Val* v) { return arg_text(v); };
  for (const RngOp* rng : ops) {
    const auto* tv = rng->output(0)->as<TensorView>();
    const PhiloxKey key =
        philox_key_of(*rng, text, drawn_philox_key(a_.drawn_random_ops, *rng, p_.graph_rng));
    const std::string step = walk == Walk::kInner
        ? "args.col_stride_" + position_name(tv)
        : "args.row_stride_" + position_name(tv) + "[" + std::to_string(p_.row_rank - 1) + "]";
    ss << indent << "nvfuse_philox::unit_words<kVec>(" << key.seed << ", " << key.offset << ", "
       << position_of(tv, walk, "0") << ", " << step << ", unit_" << name_of_value(tv) << slot
       << ");\n";
  }
  return ss.str();
}

std::string ReductionGenerator::unit_word_of(const Val* v, Walk walk) const {
  const Expr* def = v->definition();
  if ((walk != Walk::kInner && walk != Walk::kOuter) || def == nullptr || !draws_unit_words(def) ||
      v->dtype() != DataType::Float || !is_unit_uniform(*def->as<RngOp>())) {
    return "";
  }
  return "unit_" + name_of_value(v) + (walk == Walk::kInner ? "[k][v]" : "[v]");
}

std::string ReductionGenerator::unit_compare(const Expr* expr, Walk walk) const {
  if (!expr->is<PointwiseOp>() || expr->inputs().size() != 2) {
    return "";
  }
  OpType op = expr->as<PointwiseOp>()->op();
  if (op != OpType::lt && op != OpType::le && op != OpType::gt && op != OpType::ge) {
    return "";
  }
  const Val* unit = expr->input(0);
  const Val* bound = expr->input(1);
  if (unit_word_of(unit, walk).empty()) {
    // bound OP u is u OP' bound, the compare mirrored.
    std::swap(unit, bound);
    op = op == OpType::lt  ? OpType::gt
        : op == OpType::le ? OpType::ge
        : op == OpType::gt ? OpType::lt
                           : OpType::le;
  }
  const std::string word = unit_word_of(unit, walk);
  if (word.empty() || !bound->is<Scalar>()) {
    return "";
  }
  const ArgText text = [this](const Val* v) { return arg_text(v); };
  const std::string p = "float(" + scalar_text_as(bound, DataType::Float, text) + ")";
  const char* test = op == OpType::lt ? "unit_below("
      : op == OpType::le              ? "unit_at_most("
      : op == OpType::gt              ? "unit_above("
                                      : "unit_at_least(";
  return declaration(expr, "nvfuse_philox::" + std::string(test) + word + ", " + p + ")");
}

std::string ReductionGenerator::position_statement(const Expr* expr, Walk walk) const {
  const auto* tv = expr->output(0)->as<TensorView>();
  const std::string name = name_of_value(tv);
  const ArgText text = [this](const Val* v) { return arg_text(v); };
  const std::string index = position_of(tv, walk, "v");
  std::string value;
  if (expr->is<IotaOp>()) {
    value = iota_value(*expr->as<IotaOp>(), index, text);
  } else {
    const auto& rng = *expr->as<RngOp>();
    const PhiloxKey key =
        philox_key_of(rng, text, drawn_philox_key(a_.drawn_random_ops, rng, p_.graph_rng));
    // Per-row values (one per row or column): no lanes share their blocks.
    std::string unit =
        "nvfuse_philox::unit_float(unit_" + name + (walk == Walk::kInner ? "[k][v])" : "[v])");
    if (walk == Walk::kRow || walk == Walk::kOuterRow) {
      unit = "nvfuse_philox::uniform_float(" + key.seed + ", " + key.offset + ", " + index + ")";
    }
    value = random_value(rng, index, key, unit, text);
  }
  return declaration(expr, value);
}

// ---- shared text ------------------------------------------------------------

// A row's coordinates divide its index by the row extents: with 32-bit
// indices by magic numbers (FastDivider: a multiply-high and a shift, where
// an int32 division by a launch-time value costs ~20 instructions, a
// twentieth of an attention-prologue thread's).
bool ReductionGenerator::uses_row_dividers() const { return p_.index_32bit && p_.row_rank > 1; }

std::string ReductionGenerator::row_offsets(const std::string& index) const {
  std::ostringstream ss;
  ss << "  Index rest = " << index << ";\n";
  for (int axis = p_.row_rank - 1; axis > 0; --axis) {
    if (uses_row_dividers()) {
      const std::string q = "q" + std::to_string(axis);
      ss << "  const Index " << q << " = nvfuse::fast_div(rest, args.row_divider[" << axis - 1
         << "]);\n  const Index c" << axis << " = rest - " << q << " * args.row_extent[" << axis
         << "];\n  rest = " << q << ";\n";
    } else {
      ss << "  const Index c" << axis << " = rest % args.row_extent[" << axis
         << "];\n  rest /= args.row_extent[" << axis << "];\n";
    }
  }
  ss << "  const Index c0 = rest;\n";
  for (const std::string& name : walked_names()) {
    ss << "  const Index row_" << name << " = ";
    for (int axis = 0; axis < p_.row_rank; ++axis) {
      ss << (axis ? " + " : "") << "c" << axis << " * args.row_stride_" << name << "[" << axis
         << "]";
    }
    ss << ";\n";
  }
  return ss.str();
}

std::string ReductionGenerator::load(size_t t, const std::string& target, const std::string& offset,
    const std::string& indent) const {
  const std::string name = name_of_value(tensors_[t]);
  if (access(t) == InnerAccess::kContiguous) {
    return indent + target + " = *reinterpret_cast<const " + array_type(t) + "*>(args." + name +
        " + " + offset + ");\n";
  }
  return indent + target + ".val[0] = args." + name + "[" + offset + "];\n";
}

std::string ReductionGenerator::store(size_t t, const std::string& source,
    const std::string& offset, const std::string& indent) const {
  const std::string name = name_of_value(tensors_[t]);
  if (access(t) == InnerAccess::kContiguous) {
    return indent + "*reinterpret_cast<" + array_type(t) + "*>(args." + name + " + " + offset +
        ") = " + source + ";\n";
  }
  return indent + "args." + name + "[" + offset + "] = " + source + ".val[0];\n";
}

std::string ReductionGenerator::column_offset(size_t t) const {
  const std::string name = name_of_value(tensors_[t]);
  switch (access(t)) {
    case InnerAccess::kContiguous:
      return "row_" + name + " + col";
    case InnerAccess::kBroadcast:
      return "row_" + name;
    case InnerAccess::kStrided:
      break;
  }
  return "row_" + name + " + col * args.col_stride_" + name;
}

}  // namespace nvfuse
