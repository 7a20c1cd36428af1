#include "ir/fusion.h"

#include <algorithm>
#include <unordered_set>

#include "ir/printer.h"

namespace nvfuse {

void Fusion::register_statement(std::unique_ptr<Statement> node) {
  node->serial_ = static_cast<int64_t>(statements_.size());
  if (auto* val = dynamic_cast<Val*>(node.get())) {
    val->number_ = val_counts_[static_cast<int>(val->val_kind())]++;
  }
  statements_.push_back(std::move(node));
}

Scalar* Fusion::constant(ScalarValue value, DataType dtype) {
  return create<Scalar>(dtype, std::move(value));
}

Scalar* Fusion::index_constant(int64_t value) {
  return constant(ScalarValue(value), DataType::Index);
}

Scalar* Fusion::one() {
  if (one_ == nullptr) {
    one_ = index_constant(1);
  }
  return one_;
}

void Fusion::add_input(Val* input) {
  NVFUSE_ASSERT(input->fusion() == this, "input from another Fusion");
  NVFUSE_ASSERT(input->definition() == nullptr, "an input cannot be computed");
  inputs_.push_back(input);
}

void Fusion::add_output(Val* output) {
  NVFUSE_ASSERT(output->fusion() == this, "output from another Fusion");
  outputs_.push_back(output);
}

void Fusion::alias_output_to_input(TensorView* output, TensorView* input) {
  NVFUSE_ASSERT(is_input(input), "an alias target must be a fusion input");
  output_aliases_[output] = input;
}

void Fusion::redirect_outputs(const Val* from, Val* to) {
  std::replace_if(
      outputs_.begin(), outputs_.end(), [from](const Val* v) { return v == from; }, to);
}

bool Fusion::is_input(const Val* v) const {
  return std::find(inputs_.begin(), inputs_.end(), v) != inputs_.end();
}

bool Fusion::is_output(const Val* v) const {
  return std::find(outputs_.begin(), outputs_.end(), v) != outputs_.end();
}

void Fusion::retain_inputs(const std::vector<size_t>& positions) {
  std::vector<Val*> kept;
  for (size_t position : positions) {
    NVFUSE_ASSERT(position < inputs_.size(), "no input ", position);
    kept.push_back(inputs_[position]);
  }
  inputs_ = std::move(kept);
}

void Fusion::set_outputs(std::vector<Val*> outputs) {
  for (const Val* out : outputs) {
    NVFUSE_ASSERT(out->fusion() == this, "output from another Fusion");
  }
  output_aliases_.clear();
  outputs_ = std::move(outputs);
}

void Fusion::retain_outputs(const std::vector<size_t>& positions) {
  std::vector<Val*> kept;
  for (size_t position : positions) {
    NVFUSE_ASSERT(position < outputs_.size(), "no output ", position);
    kept.push_back(outputs_[position]);
  }
  for (auto it = output_aliases_.begin(); it != output_aliases_.end();) {
    const bool still_output = std::find(kept.begin(), kept.end(), it->first) != kept.end();
    it = still_output ? std::next(it) : output_aliases_.erase(it);
  }
  outputs_ = std::move(kept);
}

TensorView* Fusion::aliased_input(const Val* output) const {
  auto it = output_aliases_.find(output);
  return it == output_aliases_.end() ? nullptr : it->second;
}

void Fusion::add_extent_equality(Scalar* a, Scalar* b, Val* result) {
  if (a == b) {
    return;
  }
  extent_equalities_.push_back({a, b, result});
}

std::vector<Expr*> Fusion::exprs() const {
  std::vector<Expr*> ordered;
  std::unordered_set<const Expr*> visited;
  // Iterative post-order DFS: an expr is emitted after all its producers.
  struct Frame {
    Expr* expr;
    size_t next_input;
  };
  std::vector<Frame> stack;
  auto push = [&](const Val* v) {
    Expr* def = v->definition();
    if (def == nullptr || def->is<Split>() || def->is<Merge>() || !visited.insert(def).second) {
      return;
    }
    stack.push_back({def, 0});
  };
  for (const Val* out : outputs_) {
    push(out);
    while (!stack.empty()) {
      Frame& frame = stack.back();
      if (frame.next_input < frame.expr->inputs().size()) {
        push(frame.expr->inputs()[frame.next_input++]);
        continue;
      }
      ordered.push_back(frame.expr);
      stack.pop_back();
    }
  }
  return ordered;
}

void Fusion::remove_expr(Expr* expr) {
  for (Val* in : expr->inputs()) {
    auto& uses = in->uses_;
    uses.erase(std::remove(uses.begin(), uses.end(), expr), uses.end());
  }
  for (Val* out : expr->outputs()) {
    out->definition_ = nullptr;
  }
  auto it = std::find_if(statements_.begin(), statements_.end(),
      [expr](const auto& node) { return node.get() == expr; });
  NVFUSE_ASSERT(it != statements_.end(), "removing an expr not in the fusion");
  statements_.erase(it);
  for (size_t i = 0; i < statements_.size(); ++i) {
    statements_[i]->serial_ = static_cast<int64_t>(i);
  }
}

Expr* Fusion::replace_inputs(
    Expr* expr, const std::unordered_map<const Val*, Val*>& substitutions) {
  ExprFields fields = expr->fields();
  for (Val*& in : fields.inputs) {
    if (auto it = substitutions.find(in); it != substitutions.end()) {
      in = it->second;
    }
  }
  const ExprKind kind = expr->kind();
  remove_expr(expr);
  return create_expr(kind, std::move(fields));
}

Expr* Fusion::replace_input_at(Expr* expr, size_t position, Val* replacement) {
  ExprFields fields = expr->fields();
  NVFUSE_ASSERT(position < fields.inputs.size(), "replace_input_at: no input ", position);
  fields.inputs[position] = replacement;
  const ExprKind kind = expr->kind();
  remove_expr(expr);
  return create_expr(kind, std::move(fields));
}

void Fusion::replace_all_uses(Val* old_val, Val* replacement) {
  const std::vector<Expr*> uses = old_val->distinct_uses();
  for (Expr* use : uses) {
    replace_inputs(use, {{old_val, replacement}});
  }
  std::replace(outputs_.begin(), outputs_.end(), old_val, replacement);
}

std::string Fusion::to_string() const { return print_fusion(*this); }

}  // namespace nvfuse
