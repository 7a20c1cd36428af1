// The statements that compute one tensor's value at given coordinates, for
// the coordinate kernel: walking back from an output, each operand is
// computed at the coordinates its consumer reads it at (shifted by a slice
// or pad, chosen by cat, looked up through an index tensor...). A tensor
// read at two coordinate sets is computed twice; one read at the same set
// is computed once per scope. Loads under a pad or cat predicate sit inside
// the branch, so no element outside an operand is read.
#pragma once

#include <functional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/all_exprs.h"
#include "ir/fusion.h"

namespace nvfuse {

class CoordinateValues {
 public:
  // `arg_text(v)`: how the kernel reads a by-value input (`args.<name>`).
  // `seed_of(rng)`: the (seed, offset) expressions of a drawn random op.
  CoordinateValues(
      const Fusion& fusion,
      std::function<std::string(const Val*)> arg_text,
      std::function<std::pair<std::string, std::string>(const RngOp&)> seed_of);

  // The name of a local holding `tv` at `coords` (one Index expression per
  // logical axis), after emitting what computes it.
  std::string value_at(const TensorView* tv, std::vector<std::string> coords);
  // The offset of `tv`'s element at `coords` through its stride arguments.
  std::string offset_of(const TensorView* tv, const std::vector<std::string>& coords) const;
  // Appends a statement at the current indentation.
  void line(const std::string& text);
  std::string code() const { return code_.str(); }

 private:
  std::string compute(const TensorView* tv, const std::vector<std::string>& coords);
  std::string elementwise(const Expr& expr, const std::vector<std::string>& coords);
  std::string pad(const PadOp& expr, const std::vector<std::string>& coords);
  std::string cat(const CatOp& expr, const std::vector<std::string>& coords);
  std::string indexed(
      const Expr& expr,
      const TensorView* index,
      const std::vector<std::string>& index_coords,
      const std::vector<std::string>& coords,
      int64_t dim);
  std::string random(const RngOp& expr, const std::vector<std::string>& coords);
  std::vector<std::string> slice_coords(
      const SliceOp& expr,
      const std::vector<std::string>& coords);

  // `const <type> <fresh> = <value>;  // <comment>`; the fresh name.
  std::string declare(const std::string& type, const std::string& value,
                      const std::string& comment = "");
  std::string declare_index(const std::string& value) {
    return declare("Index", value);
  }
  // A scalar as a value of `dtype`, and as a 64-bit integer.
  std::string scalar_as(const Val* s, DataType dtype) const;
  std::string int64_of(const Val* s) const;
  // An index read from an index tensor (any integer type), wrapped and
  // clamped into [0, extent).
  std::string checked_index(const std::string& value, const Val* extent);

  void open_scope();
  void close_scope();

  const Fusion& fusion_;
  std::function<std::string(const Val*)> arg_text_;
  std::function<std::pair<std::string, std::string>(const RngOp&)> seed_of_;
  std::ostringstream code_;
  int indent_ = 1;
  int next_name_ = 0;
  // (tensor, coordinates) -> local, one map per open branch.
  std::vector<std::unordered_map<std::string, std::string>> scopes_;
};

}  // namespace nvfuse
