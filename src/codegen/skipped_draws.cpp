// Draws a group of a row may skip: a dropout after a masked softmax keeps
// or drops exact zeros wherever the mask filled -inf, and there its random
// words choose between two equal values (ReductionAnalysis::
// masked_choices says which fusions are so). Philox is about 10 of the 40
// instructions an element of the bf16 attention prologue (mask, softmax,
// dropout; docs/reductions.md); a causal mask zeros half of each row on
// average, in runs of whole groups. The test costs a compare an element
// (its operands are computed again by the lane loop after it, the same
// expressions, which the compiler merges), so it is only emitted where a
// masked fill feeds the wheres. Results are the same bits as with every
// draw made.
#include "codegen/reduction_generator.h"

#include <sstream>

#include "codegen/index_values.h"

namespace nvfuse {

ReductionGenerator::SkippableDraws ReductionGenerator::skippable_draws(
    const std::vector<const Expr*>& exprs, int phase) const {
  SkippableDraws none;
  if (!p_.late_draws || !p_.persistent || p_.inner_outer) {
    return none;
  }
  SkippableDraws skippable;
  skippable.ops = unit_word_ops(exprs);
  if (skippable.ops.empty()) {
    return none;
  }
  // The wheres this phase's draws decide, all in this phase (a later
  // phase's where would read the words this test left zero).
  const ExprSet in_phase(exprs.begin(), exprs.end());
  for (const Expr* where : a_.masked_choices()) {
    const Expr* test = where->input(0)->definition();
    const bool decided_here = std::any_of(skippable.ops.begin(), skippable.ops.end(),
        [&](const RngOp* rng) { return test->reads(rng->output(0)); });
    if (!decided_here) {
      continue;
    }
    if (!in_phase.count(where) || !in_phase.count(test)) {
      return none;
    }
    skippable.wheres.push_back(where);
  }
  if (skippable.wheres.empty()) {
    return none;
  }
  std::vector<const TensorView*> operands;
  for (const Expr* where : skippable.wheres) {
    for (size_t i = 1; i < 3; ++i) {
      if (where->input(i)->is<TensorView>()) {
        operands.push_back(where->input(i)->as<TensorView>());
      }
    }
  }
  skippable.operand_exprs = cone(operands, false, &skippable.operand_loads, phase);
  return skippable;
}

std::string ReductionGenerator::draws_where_needed(
    const SkippableDraws& skippable, const std::string& indent) const {
  std::ostringstream ss;
  const std::string body = indent + "  ";
  ss << indent << "// Draws only where they choose between unequal values.\n"
     << indent << "bool draw = false;\n"
     << "#pragma unroll\n"
     << indent << "for (int v = 0; v < kVec; ++v) {\n"
     << element_values(skippable.operand_loads, skippable.operand_exprs, body);
  for (const Expr* where : skippable.wheres) {
    const std::string type = cuda_type_of(where->output(0)->dtype());
    const auto operand = [&](size_t i) {
      const Val* v = where->input(i);
      return v->is<TensorView>() ? name_of_value(v)
                                 : scalar_text_as(v, where->output(0)->dtype(),
                                       [this](const Val* s) { return arg_text(s); });
    };
    ss << body << "draw |= nvfuse::differ_in_bits(" << type << "(" << operand(1) << "), " << type
       << "(" << operand(2) << "));\n";
  }
  ss << indent << "}\n"
     << indent << "if (draw) {\n"
     << draw_unit_words(skippable.ops, Walk::kInner, "[k]", indent + "  ") << indent << "} else {\n"
     << "#pragma unroll\n"
     << indent << "  for (int v = 0; v < kVec; ++v) {\n";
  for (const RngOp* rng : skippable.ops) {
    ss << indent << "    unit_" << name_of_value(rng->output(0)) << "[k][v] = 0;\n";
  }
  ss << indent << "  }\n" << indent << "}\n";
  return ss.str();
}

}  // namespace nvfuse
