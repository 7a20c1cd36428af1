// A cat in the coordinate kernel: each lane's value is the part its
// coordinate along the cat axis falls in, read at that coordinate less the
// part's start.
#include <algorithm>
#include <optional>

#include "codegen/coordinate_values.h"
#include "codegen/kernel_args.h"
#include "ir/printer.h"

namespace nvfuse {

namespace {

// How a cat part reads a tensor: `tensor` cut by `slice` (none: read
// whole), then `chain`, pointwise ops on that one tensor, in order.
struct PartRead {
  const TensorView* tensor = nullptr;
  const SliceOp* slice = nullptr;
  std::vector<const Expr*> chain;
};

// The part's read; nullopt where anything but one-tensor pointwise ops and
// one slice computes it (two tensors meet, a broadcast, a random op...).
std::optional<PartRead> part_read(const TensorView* part) {
  PartRead read;
  const TensorView* tv = part;
  for (const Expr* def = tv->definition();
       def != nullptr && (def->is<PointwiseOp>() || def->is<CastOp>()); def = tv->definition()) {
    const TensorView* operand = nullptr;
    for (const Val* v : def->inputs()) {
      if (v->is<TensorView>()) {
        if (operand != nullptr) {
          return std::nullopt;
        }
        operand = v->as<TensorView>();
      }
    }
    if (operand == nullptr || operand->rank() != tv->rank()) {
      return std::nullopt;
    }
    read.chain.push_back(def);
    tv = operand;
  }
  if (tv->definition() != nullptr && tv->definition()->is<SliceOp>()) {
    read.slice = tv->definition()->as<SliceOp>();
    tv = tensor_input(*read.slice, 0);
  }
  read.tensor = tv;
  std::reverse(read.chain.begin(), read.chain.end());
  return read;
}

}  // namespace

std::string CoordinateValues::cat(const CatOp& expr, const std::vector<LaneCoord>& coords) {
  lanes_may_be_flat_ = false;  // its parts' predicates are shared by the lanes
  const int64_t dim = expr.dim();
  // Where each part starts along `dim`, declared before the parts.
  const size_t count = expr.inputs().size();
  std::vector<const Scalar*> boundaries;
  std::vector<std::string> starts = {"Index(0)"};
  for (size_t k = 0; k + 1 < count; ++k) {
    boundaries.push_back(extent_of(expr.input(k), dim));
    starts.push_back(declare(
        "Index", starts.back() + " + Index(" + int64_of(extent_of(expr.input(k), dim)) + ")"));
  }
  share_predicate(coords[dim], boundaries);
  if (count == 1) {
    return value_at(tensor_input(expr, 0), coords);
  }
  // Part k read at its own coordinates: shifted back by where it starts.
  auto part_coords = [&](size_t k) {
    std::vector<LaneCoord> in = coords;
    LaneCoord& c = in[dim];
    if (k == 0) {
      return in;
    }
    if (c.per_lane) {
      const std::string source = c.base;
      c.base = lanes(
          "Index", [&](const std::string& l) { return source + ".val[" + l + "] - " + starts[k]; });
    } else {
      c.base = "(" + c.base + " - " + starts[k] + ")";
    }
    return in;
  };
  if (count > kSelectedCatParts) {
    return cat_branches(expr, coords[dim].lane("0"), starts, part_coords);
  }
  const std::string at = coords[dim].lane("0");
  auto in_part_test = [&](size_t k) {
    std::string test = k == 0 ? "" : at + " >= " + starts[k];
    if (k + 1 < count) {
      test += std::string(test.empty() ? "" : " && ") + at + " < " + starts[k + 1];
    }
    return test;
  };
  // The select below tests every part but the last.
  std::vector<std::string> in_part;
  for (size_t k = 0; k + 1 < count; ++k) {
    in_part.push_back(declare("bool", in_part_test(k)));
  }
  std::vector<std::string> parts = parts_of_one_read(expr, in_part, part_coords);
  if (parts.empty()) {
    // Every part computed under its own predicate (its loads predicated),
    // then one select: no branch for lanes of a warp to diverge on, and no
    // load waiting behind another part's.
    in_part.push_back(declare("bool", in_part_test(count - 1)));
    for (size_t k = 0; k < count; ++k) {
      const std::vector<LaneCoord> in = part_coords(k);
      open_guard(in_part[k]);
      parts.push_back(value_at(tensor_input(expr, k), in));
      close_guard();
    }
  }
  return lanes(
      cuda_type_of(expr.output(0)->dtype()),
      [&](const std::string& l) {
        std::string chosen = parts.back() + ".val[" + l + "]";
        for (size_t k = count - 1; k-- > 0;) {
          chosen = in_part[k] + " ? " + parts[k] + ".val[" + l + "] : " + chosen;
        }
        return chosen;
      },
      print_expr(expr));
}

std::string CoordinateValues::cat_branches(const CatOp& expr, const std::string& at,
    const std::vector<std::string>& starts,
    const std::function<std::vector<LaneCoord>(size_t)>& part_coords) {
  const size_t count = expr.inputs().size();
  const std::string name = "v" + std::to_string(next_name_++);
  line(
      array_type(cuda_type_of(expr.output(0)->dtype())) + " " + name + ";  // " + print_expr(expr));
  for (size_t k = 0; k < count; ++k) {
    if (k + 1 < count) {
      line(std::string(k == 0 ? "" : "} else ") + "if (" + at + " < " + starts[k + 1] + ") {");
    } else {
      line("} else {");
    }
    open_scope();
    const std::vector<LaneCoord> in = part_coords(k);
    line(name + " = " + value_at(tensor_input(expr, k), in) + ";");
    close_scope();
  }
  line("}");
  return name;
}

std::vector<std::string> CoordinateValues::parts_of_one_read(const CatOp& expr,
    const std::vector<std::string>& in_part,
    const std::function<std::vector<LaneCoord>(size_t)>& part_coords) {
  const size_t count = expr.inputs().size();
  const std::vector<LaneCoord> coords = part_coords(0);  // the cat's own
  std::vector<PartRead> reads;
  for (size_t k = 0; k < count; ++k) {
    std::optional<PartRead> read = part_read(tensor_input(expr, k));
    if (!read || (k > 0 && read->tensor != reads.front().tensor)) {
      return {};
    }
    reads.push_back(*read);
  }
  // Every check before the first statement: a statement emitted for a
  // read that then does not happen would be dead code (and a warning).
  // The lanes must move alike in every part: no per-lane (gathered)
  // coordinate, and one slice step along each axis they move on.
  for (size_t axis = 0; axis < coords.size(); ++axis) {
    if (coords[axis].per_lane) {
      return {};
    }
    if (!coords[axis].varies()) {
      continue;
    }
    const auto step_of = [&](const PartRead& read) {
      return read.slice ? *read.slice->input(3 + 3 * axis)->as<Scalar>()->constant_int()
                        : int64_t{1};
    };
    for (const PartRead& read : reads) {
      if (step_of(read) != step_of(reads.front())) {
        return {};
      }
    }
  }
  std::vector<std::vector<LaneCoord>> at;
  for (size_t k = 0; k < count; ++k) {
    at.push_back(reads[k].slice ? slice_coords(*reads[k].slice, part_coords(k)) : part_coords(k));
  }
  // The coordinates each lane reads the tensor at: its own part's, chosen
  // axis by axis where the parts differ.
  std::vector<LaneCoord> chosen = at.back();
  for (size_t axis = 0; axis < chosen.size(); ++axis) {
    std::string base = at.back()[axis].base;
    bool differ = false;
    for (size_t k = count - 1; k-- > 0;) {
      const LaneCoord& c = at[k][axis];
      differ = differ || c.base != chosen[axis].base;
      base = in_part[k] + " ? " + c.base + " : " + base;
      chosen[axis].aligned = chosen[axis].aligned && c.aligned;
    }
    if (differ) {
      chosen[axis].base = declare("Index", base);
    }
  }
  const std::string read = value_at(reads.front().tensor, chosen);
  std::vector<std::string> parts;
  for (const PartRead& part : reads) {
    std::string value = read;
    for (const Expr* op : part.chain) {
      // The op's one tensor operand is the value so far (part_read).
      std::unordered_map<const Val*, std::string> names;
      for (const Val* v : op->inputs()) {
        if (v->is<TensorView>()) {
          names[v] = value;
        }
      }
      value = elementwise_of(*op, names);
    }
    parts.push_back(value);
  }
  return parts;
}

}  // namespace nvfuse
