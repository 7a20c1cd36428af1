// A Fusion owns an SSA graph of Vals and Exprs, and knows its inputs,
// outputs, in-place output aliases, and the extents that must agree at run
// time. Nothing here is global: every pass and op receives its Fusion.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/exprs.h"
#include "ir/scalar.h"
#include "ir/statement.h"
#include "ir/tensor_view.h"

namespace nvfuse {

// Two extents the definition requires to be equal (e.g. the same axis of two
// operands of an add); checked when inputs are bound.
struct ExtentEquality {
  Scalar* a;
  Scalar* b;
  // A value computed by the op that combined them (its definition names the
  // op; a Val, not the Expr, because passes may replace exprs).
  Val* result;
};

// Old Val -> new Val, filled by Fusion::clone.
using CloneMap = std::unordered_map<const Val*, Val*>;

class Fusion {
 public:
  Fusion() = default;
  Fusion(const Fusion&) = delete;
  Fusion& operator=(const Fusion&) = delete;

  template <typename T, typename... Args>
  T* create(Args&&... args) {
    auto node = std::unique_ptr<T>(new T(this, std::forward<Args>(args)...));
    T* raw = node.get();
    register_statement(std::move(node));
    return raw;
  }

  // An Expr of `kind` built from its fields (used by cloning and rewriting).
  Expr* create_expr(ExprKind kind, ExprFields fields);

  Scalar* constant(ScalarValue value, DataType dtype);
  // An Index-typed constant, as used for extents.
  Scalar* index_constant(int64_t value);
  Scalar* one();

  void add_input(Val* input);
  void add_output(Val* output);
  // `output` is written in place into `input`, and not returned.
  void alias_output_to_input(TensorView* output, TensorView* input);
  // Every output entry that is `from` becomes `to`.
  void redirect_outputs(const Val* from, Val* to);

  const std::vector<Val*>& inputs() const { return inputs_; }
  const std::vector<Val*>& outputs() const { return outputs_; }
  bool is_input(const Val* v) const;
  bool is_output(const Val* v) const;
  // The input an output is written into, or nullptr.
  TensorView* aliased_input(const Val* output) const;

  void add_extent_equality(Scalar* a, Scalar* b, Val* result);
  const std::vector<ExtentEquality>& extent_equalities() const { return extent_equalities_; }

  // The value-computing exprs the outputs depend on, in topological order
  // (producers first; inputs visited in order, so the order is
  // deterministic). Domain transforms such as Split and Merge are excluded.
  std::vector<Expr*> exprs() const;
  const std::vector<std::unique_ptr<Statement>>& statements() const { return statements_; }

  // Rewriting, for passes. Exprs are immutable: `replace_inputs` swaps
  // `expr` for a new Expr of the same kind and attributes whose inputs are
  // substituted; the outputs keep their identity. Returns the new Expr.
  Expr* replace_inputs(Expr* expr, const std::unordered_map<const Val*, Val*>& substitutions);
  // The same for the input at `position` only (a Scalar operand that
  // other positions share, such as one of a reshape's equal sizes).
  Expr* replace_input_at(Expr* expr, size_t position, Val* replacement);
  // Points every use of `old_val` (and its place among the outputs) at
  // `replacement`.
  void replace_all_uses(Val* old_val, Val* replacement);
  // Keeps only the outputs at `positions` (in that order), so exprs() then
  // visits just what they need (segmentation: a clone per segment).
  void retain_outputs(const std::vector<size_t>& positions);
  // Keeps the inputs at `positions` (in that order), e.g. a segment's.
  void retain_inputs(const std::vector<size_t>& positions);
  // Replaces the outputs (a segment's); in-place aliases are dropped.
  void set_outputs(std::vector<Val*> outputs);

  // A deep copy; `map` (optional) receives old -> new for every Val.
  std::unique_ptr<Fusion> clone(CloneMap* map = nullptr) const;

  // The printed IR (see printer.h).
  std::string to_string() const;

 private:
  void register_statement(std::unique_ptr<Statement> node);
  void remove_expr(Expr* expr);

  std::vector<std::unique_ptr<Statement>> statements_;
  std::vector<Val*> inputs_;
  std::vector<Val*> outputs_;
  std::unordered_map<const Val*, TensorView*> output_aliases_;
  std::vector<ExtentEquality> extent_equalities_;
  int64_t val_counts_[3] = {0, 0, 0};  // per ValKind, for numbering
  Scalar* one_ = nullptr;
};

}  // namespace nvfuse
