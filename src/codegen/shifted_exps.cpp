// Exps of a per-element value less a per-row one, summed over the row and
// read by nothing else (cross-entropy's and log-softmax's sum of
// exp(x - max)): taken as one FFMA and an ex2 each (nvfuse::ExpShift in
// device_reduction.cuh) instead of a subtraction, a product and an ex2,
// the row sum corrected once. Rows whose shift is too large for that take
// a second copy of the phase as written.

#include "codegen/reduction_generator.h"

#include <algorithm>
#include <sstream>

#include "codegen/kernel_args.h"

namespace nvfuse {

namespace {

bool is_pointwise(const Expr* expr, OpType op) {
  return expr != nullptr && expr->is<PointwiseOp>() && expr->as<PointwiseOp>()->op() == op;
}

}  // namespace

int ReductionGenerator::readers_in_kernel(const Val* v) const {
  int readers = 0;
  for (const Expr* expr : a_.exprs) {
    readers += expr->reads(v) ? 1 : 0;
  }
  const std::vector<const TensorView*> outputs = a_.kernel_outputs();
  const bool is_output = std::find(outputs.begin(), outputs.end(), v) != outputs.end();
  return readers + (is_output ? 1 : 0);
}

std::vector<ReductionGenerator::ShiftedExp> ReductionGenerator::shifted_exps(int phase) const {
  std::vector<ShiftedExp> shifted;
  // Rows that one block holds in registers only. Two copies of a phase
  // that loads its chunks made a streamed log-softmax fp32 row spill 100
  // bytes at 64 registers, and cluster rows took more registers (cross-
  // entropy bf16 of 65536: 32 -> 39, fp32 of 32000: 32 -> 38), which
  // costs their blocks of 512 threads an SM's fourth block; not measured.
  if (!p_.persistent || streamed() || p_.inner_outer || p_.cluster > 1) {
    return shifted;
  }
  TensorSet loads;
  const std::vector<const Expr*> phase_exprs = cone(element_roots(phase), false, &loads, phase);
  for (const Expr* r : reductions_of_phase(phase)) {
    if (!r->is<ReductionOp>() || r->as<ReductionOp>()->op() != OpType::add ||
        math_dtype_of(r->output(0)->dtype()) != DataType::Float) {
      continue;
    }
    const Val* e = r->input(0);
    const Expr* exp = e->definition();
    if (!is_pointwise(exp, OpType::exp) || !exp_of_nonpositive(exp) ||
        readers_in_kernel(e) != 1) {
      continue;
    }
    const Val* difference = exp->input(0);
    const Expr* sub = difference->definition();
    if (!is_pointwise(sub, OpType::sub)) {
      continue;
    }
    const Val* a = sub->input(0);
    const Val* b = sub->input(1);
    if (!a->is<TensorView>() || !b->is<TensorView>() || a->dtype() != DataType::Float ||
        b->dtype() != DataType::Float || per_row(a->as<TensorView>()) ||
        !per_row(b->as<TensorView>())) {
      continue;
    }
    // Log-softmax reads its difference again, in its last phase (x - max -
    // log-sum): the copy leaves out only a difference that no other expr
    // of the phase reads.
    const bool read_elsewhere = std::any_of(
        phase_exprs.begin(), phase_exprs.end(),
        [&](const Expr* e) { return e != exp && e->reads(difference); });
    shifted.push_back({exp, r, a, b, !read_elsewhere});
  }
  return shifted;
}

const ReductionGenerator::ShiftedExp* ReductionGenerator::shifted_in_copy(
    const Expr* expr) const {
  if (shifting_ == nullptr) {
    return nullptr;
  }
  for (const ShiftedExp& s : *shifting_) {
    if (s.exp == expr) {
      return &s;
    }
  }
  return nullptr;
}

bool ReductionGenerator::dead_in_copy(const Expr* expr) const {
  if (shifting_ == nullptr) {
    return false;
  }
  for (const ShiftedExp& s : *shifting_) {
    if (s.difference_dead && s.exp->input(0)->definition() == expr) {
      return true;
    }
  }
  return false;
}

std::string ReductionGenerator::shifted_exp_statement(const ShiftedExp& s) const {
  return declaration(s.exp, shift_name(s) + ".exp(" + name_of_value(s.element) + ")");
}

std::string ReductionGenerator::phase_with_shifts(int phase, TensorSet& loaded) const {
  const std::vector<ShiftedExp> shifted = shifted_exps(phase);
  if (shifted.empty()) {
    return inner_phase(phase, loaded);
  }
  std::ostringstream ss;
  std::string exact;
  for (const ShiftedExp& s : shifted) {
    ss << "  const nvfuse::ExpShift " << shift_name(s) << "(" << name_of_value(s.row_value)
       << ");  // exp(x - " << name_of_value(s.row_value) << ") as 2^(x*log2(e) - shift)\n";
    exact += (exact.empty() ? "" : " && ") + shift_name(s) + ".exact()";
  }
  // Both copies load what the phase loads; only one runs.
  TensorSet loaded_by_copy = loaded;
  shifting_ = &shifted;
  const std::string shifted_copy = inner_phase(phase, loaded_by_copy);
  shifting_ = nullptr;
  ss << "  if (" << exact << ") {\n" << indented(shifted_copy, "  ");
  for (const ShiftedExp& s : shifted) {
    ss << "    " << acc_name(s.sum) << " *= " << shift_name(s) << ".correction();\n";
  }
  ss << "  } else {  // a shift too large for the FFMA form: the phase as written\n"
     << indented(inner_phase(phase, loaded), "  ") << "  }\n";
  return ss.str();
}

}  // namespace nvfuse
