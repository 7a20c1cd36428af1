// Draws a group of a row may skip: a dropout after a masked softmax keeps
// or drops exact zeros wherever the mask filled -inf, and there its random
// words choose between two equal values. Philox is about 10 of the 40
// instructions an element of the bf16 attention prologue (mask, softmax,
// dropout; docs/reductions.md); a causal mask zeros half of each row on
// average, in runs of whole groups. The test costs a compare an element (its operands are
// computed again by the lane loop after it, the same expressions, which
// the compiler merges), so it is only emitted where a masked fill feeds
// the wheres. Results are the same bits as with every draw made.
#include "codegen/reduction_generator.h"

#include <sstream>

#include "codegen/index_values.h"

namespace nvfuse {

namespace {

bool is_where(const Expr* expr) {
  return expr->is<PointwiseOp>() && expr->as<PointwiseOp>()->op() == OpType::where;
}

}  // namespace

ReductionGenerator::SkippableDraws ReductionGenerator::skippable_draws(
    const std::vector<const Expr*>& exprs, int phase) const {
  SkippableDraws none;
  if (!p_.late_draws || !p_.persistent || p_.inner_outer) {
    return none;
  }
  const ExprSet in_phase(exprs.begin(), exprs.end());
  const auto uses_of = [&](const Val* v) {
    std::vector<const Expr*> uses;
    for (const Expr* e : a_.exprs) {
      if (std::find(e->inputs().begin(), e->inputs().end(), v) != e->inputs().end()) {
        uses.push_back(e);
      }
    }
    return uses;
  };
  const auto is_output = [&](const Val* v) {
    return std::find(a_.outputs.begin(), a_.outputs.end(), v) != a_.outputs.end();
  };
  SkippableDraws skippable;
  skippable.ops = unit_word_ops(exprs);
  if (skippable.ops.empty()) {
    return none;
  }
  // Each random value reaches only compares of its words, each compare
  // only the conditions of wheres, all in this phase.
  for (const RngOp* rng : skippable.ops) {
    if (is_output(rng->output(0))) {
      return none;
    }
    for (const Expr* compare : uses_of(rng->output(0))) {
      const Val* keep = compare->output(0);
      if (!in_phase.count(compare) || unit_compare(compare, Walk::kInner).empty() ||
          is_output(keep)) {
        return none;
      }
      for (const Expr* where : uses_of(keep)) {
        if (!in_phase.count(where) || !is_where(where) || where->input(1) == keep ||
            where->input(2) == keep) {
          return none;
        }
        if (std::find(skippable.wheres.begin(), skippable.wheres.end(), where) ==
            skippable.wheres.end()) {
          skippable.wheres.push_back(where);
        }
      }
    }
  }
  // Their operands: computed without random values, one made from a masked
  // fill (walking back through the earlier phases' values too).
  std::vector<const TensorView*> operands;
  for (const Expr* where : skippable.wheres) {
    for (size_t i = 1; i < 3; ++i) {
      if (where->input(i)->is<TensorView>()) {
        operands.push_back(where->input(i)->as<TensorView>());
      }
    }
  }
  skippable.operand_exprs = cone(operands, false, &skippable.operand_loads, phase);
  bool masked = false;
  std::vector<const Val*> stack(operands.begin(), operands.end());
  std::set<const Val*> seen;
  while (!stack.empty()) {
    const Val* v = stack.back();
    stack.pop_back();
    const Expr* def = v->definition();
    if (!seen.insert(v).second || def == nullptr || is_reduction(def)) {
      continue;
    }
    if (def->is<RngOp>()) {
      return none;
    }
    masked = masked || is_masked_fill(*def);
    stack.insert(stack.end(), def->inputs().begin(), def->inputs().end());
  }
  return masked ? skippable : none;
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
      return v->is<TensorView>()
          ? name_of_value(v)
          : scalar_text_as(v, where->output(0)->dtype(),
                           [this](const Val* s) { return arg_text(s); });
    };
    ss << body << "draw |= nvfuse::differ_in_bits(" << type << "(" << operand(1) << "), "
       << type << "(" << operand(2) << "));\n";
  }
  ss << indent << "}\n"
     << indent << "if (draw) {\n"
     << draw_unit_words(skippable.ops, Walk::kInner, "[k]", indent + "  ")
     << indent << "} else {\n"
     << "#pragma unroll\n"
     << indent << "  for (int v = 0; v < kVec; ++v) {\n";
  for (const RngOp* rng : skippable.ops) {
    ss << indent << "    unit_" << name_of_value(rng->output(0)) << "[k][v] = 0;\n";
  }
  ss << indent << "  }\n" << indent << "}\n";
  return ss.str();
}

}  // namespace nvfuse
