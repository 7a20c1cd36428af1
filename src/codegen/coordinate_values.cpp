#include "codegen/coordinate_values.h"

#include <algorithm>

#include "codegen/emit_op.h"
#include "codegen/expr_statement.h"
#include "codegen/index_values.h"
#include "codegen/kernel_args.h"
#include "ir/errors.h"
#include "ir/printer.h"

namespace nvfuse {

namespace {

std::string key_of(const TensorView* tv, const std::vector<LaneCoord>& coords) {
  std::string key = name_of_value(tv) + "@";
  for (const LaneCoord& c : coords) {
    key += c.base + (c.per_lane ? "[]" : "+" + std::to_string(c.lane_step)) + ",";
  }
  return key;
}

LaneCoord uniform(const std::string& base) { return LaneCoord{base, 0, false}; }

}  // namespace

std::string LaneCoord::lane(const std::string& l) const {
  if (per_lane) {
    return base + ".val[" + l + "]";
  }
  if (lane_step == 0 || l == "0") {
    return base;
  }
  return "(" + base + " + Index(" + l + ")" +
      (lane_step == 1 ? "" : " * " + std::to_string(lane_step)) + ")";
}

CoordinateValues::CoordinateValues(const Fusion& fusion, int vector_width,
    std::function<std::string(const Val*)> arg_text, std::vector<const RngOp*> drawn,
    bool vectors_aligned, bool graph_rng)
    : fusion_(fusion),
      vector_width_(vector_width),
      arg_text_(std::move(arg_text)),
      drawn_(std::move(drawn)),
      graph_rng_(graph_rng),
      scopes_(1),
      vectors_aligned_(vectors_aligned) {}

void CoordinateValues::line(const std::string& text) {
  code_ << std::string(2 * indent_, ' ') << text << "\n";
}

void CoordinateValues::open_scope() {
  scopes_.emplace_back();
  ++indent_;
}

void CoordinateValues::close_scope() {
  scopes_.pop_back();
  --indent_;
}

std::string CoordinateValues::declare(
    const std::string& type, const std::string& value, const std::string& comment) {
  const std::string name = "v" + std::to_string(next_name_++);
  line("const " + type + " " + name + " = " + value + ";" +
      (comment.empty() ? "" : "  // " + comment));
  return name;
}

std::string CoordinateValues::lanes(const std::string& element_type,
    const std::function<std::string(const std::string&)>& lane_value, const std::string& comment) {
  const std::string name = "v" + std::to_string(next_name_++);
  line(array_type(element_type) + " " + name + ";" + (comment.empty() ? "" : "  // " + comment));
  line("#pragma unroll");
  line("for (int l = 0; l < kVec; ++l) " + name + ".val[l] = " + lane_value("l") + ";");
  return name;
}

std::string CoordinateValues::scalar_as(const Val* s, DataType dtype) const {
  return scalar_text_as(s, dtype, arg_text_);
}

std::string CoordinateValues::int64_of(const Val* s) const { return int64_text(s, arg_text_); }

void CoordinateValues::lay_out_densely(
    std::vector<const TensorView*> dense, std::vector<LaneCoord> iteration, bool flat) {
  dense_ = std::move(dense);
  iteration_ = std::move(iteration);
  flat_ = flat;
}

bool CoordinateValues::reads_rows_only(
    const TensorView* tv, const std::vector<LaneCoord>& coords) const {
  if (!flat_) {
    return false;
  }
  bool varies = false;
  for (int64_t axis = 0; axis < tv->rank(); ++axis) {
    const LaneCoord& c = coords[axis];
    if (!c.varies()) {
      continue;
    }
    const auto outer = std::find_if(iteration_.begin(), iteration_.end() - 1,
        [&](const LaneCoord& at) { return at.per_lane && at.base == c.base; });
    if (!c.per_lane || outer == iteration_.end() - 1) {
      return false;
    }
    varies = true;
  }
  return varies;
}

bool CoordinateValues::at_flat_group(
    const TensorView* tv, const std::vector<LaneCoord>& coords) const {
  if (!flat_ || std::find(dense_.begin(), dense_.end(), tv) == dense_.end()) {
    return false;
  }
  for (int64_t axis = 0; axis < tv->rank(); ++axis) {
    const LaneCoord& c = coords[axis];
    const LaneCoord& at = iteration_[axis];
    const bool same = c.base == at.base && c.per_lane == at.per_lane;
    if (!same && !tv->logical()[axis]->is_broadcast()) {
      return false;
    }
  }
  return true;
}

std::string CoordinateValues::offset_of(
    const TensorView* tv, const std::vector<LaneCoord>& coords, const std::string& l) const {
  if (std::find(dense_.begin(), dense_.end(), tv) != dense_.end()) {
    std::string shifts;
    bool any_same = false;
    const int64_t last = tv->rank() - 1;
    for (int64_t axis = 0; axis <= last; ++axis) {
      const LaneCoord& c = coords[axis];
      const LaneCoord& at = iteration_[axis];
      if (tv->logical()[axis]->is_broadcast() ||
          (c.base == at.base && c.lane_step == at.lane_step && c.per_lane == at.per_lane)) {
        any_same = true;  // an axis of extent 1 is at 0 in both
        continue;
      }
      // Unit stride innermost (dense).
      shifts += " + (" + c.lane(l) + " - " + at.lane(l) + ")" +
          (axis == last ? ""
                        : " * args.stride_" + name_of_value(tv) + "[" + std::to_string(axis) + "]");
    }
    if (any_same) {
      return "g * kVec" + (l == "0" ? std::string() : " + Index(" + l + ")") + shifts;
    }
  }
  std::string text;
  for (int64_t axis = 0; axis < tv->rank(); ++axis) {
    if (tv->logical()[axis]->is_broadcast()) {
      continue;
    }
    text += (text.empty() ? "" : " + ") + coords[axis].lane(l) + " * args.stride_" +
        name_of_value(tv) + "[" + std::to_string(axis) + "]";
  }
  return text.empty() ? "0" : text;
}

void CoordinateValues::share_predicate(
    const LaneCoord& coord, std::vector<const Scalar*> boundaries) {
  if (!coord.varies()) {
    return;
  }
  if (coord.per_lane || coord.lane_step != 1) {
    lanes_share_predicates_ = false;
    return;
  }
  for (const Scalar* b : boundaries) {
    lane_multiples_.push_back(b);
  }
  lane_multiples_.insert(lane_multiples_.end(), coord.shifts.begin(), coord.shifts.end());
}

std::string CoordinateValues::value_at(const TensorView* tv, std::vector<LaneCoord> coords) {
  coords = on_broadcast_axes_zero(tv, std::move(coords));
  const std::string key = key_of(tv, coords);
  for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope) {
    auto found = scope->find(key);
    if (found != scope->end()) {
      return found->second;
    }
  }
  const bool under_pads_alone = !guards_.empty() &&
      std::all_of(guards_.begin(), guards_.end(), [](const Guard& g) { return g.pad; });
  if (under_pads_alone && at_iteration_coordinates(coords)) {
    return unguarded(tv, coords, key);
  }
  const std::string name = compute(tv, coords);
  scopes_.back()[key] = name;
  return name;
}

bool CoordinateValues::at_iteration_coordinates(const std::vector<LaneCoord>& coords) const {
  if (iteration_.empty()) {
    return false;
  }
  return std::all_of(coords.begin(), coords.end(), [&](const LaneCoord& c) {
    if (!c.shifts.empty()) {
      return false;
    }
    if (c.base == "0" && !c.varies()) {
      return true;
    }
    return std::any_of(iteration_.begin(), iteration_.end(), [&](const LaneCoord& at) {
      return c.base == at.base && c.lane_step == at.lane_step && c.per_lane == at.per_lane;
    });
  });
}

std::string CoordinateValues::unguarded(
    const TensorView* tv, const std::vector<LaneCoord>& coords, const std::string& key) {
  // The guards' scopes are the innermost ones (no block opens inside a
  // guard here): set aside with the guards while the value is computed,
  // so that it neither reads their values nor predicates its loads.
  const size_t kept = guards_.front().scope;
  if (kept + guards_.size() != scopes_.size()) {
    const std::string name = compute(tv, coords);  // a block inside a guard
    scopes_.back()[key] = name;
    return name;
  }
  std::vector<std::unordered_map<std::string, std::string>> guard_scopes(
      std::make_move_iterator(scopes_.begin() + static_cast<std::ptrdiff_t>(kept)),
      std::make_move_iterator(scopes_.end()));
  scopes_.resize(kept);
  std::vector<Guard> guards = std::move(guards_);
  guards_.clear();
  const std::string name = compute(tv, coords);
  scopes_.back()[key] = name;
  guards_ = std::move(guards);
  for (auto& scope : guard_scopes) {
    scopes_.push_back(std::move(scope));
  }
  return name;
}

std::vector<LaneCoord> CoordinateValues::on_broadcast_axes_zero(
    const TensorView* tv, std::vector<LaneCoord> coords) const {
  NVFUSE_ASSERT(static_cast<int64_t>(coords.size()) == tv->rank(), tv->name(), " read with ",
      coords.size(), " coordinates");
  for (int64_t axis = 0; axis < tv->rank(); ++axis) {
    if (tv->logical()[axis]->is_broadcast()) {
      coords[axis] = uniform("0");  // every element of a size-1 axis is the one
    }
  }
  return coords;
}

void CoordinateValues::provide(
    const TensorView* tv, std::vector<LaneCoord> coords, const std::string& name) {
  scopes_.back()[key_of(tv, on_broadcast_axes_zero(tv, std::move(coords)))] = name;
}

void CoordinateValues::open_block(const std::string& header) {
  line(header + " {");
  open_scope();
}

void CoordinateValues::close_block() {
  close_scope();
  line("}");
}

std::string CoordinateValues::load(const TensorView* tv, const std::vector<LaneCoord>& coords) {
  const std::string type = cuda_type_of(tv->dtype());
  const std::string pointer = "args." + name_of_value(tv);
  const std::string name = "v" + std::to_string(next_name_++);
  line(array_type(type) + " " + name + ";  // load " + tv->name());
  if (guarded_per_lane()) {
    // Each lane loads under its own predicate.
    line(name + " = " + array_type(type) + "{};");
    line("#pragma unroll");
    line("for (int l = 0; l < kVec; ++l) if (" + current_guard("l") + ") " + name +
        ".val[l] = " + pointer + "[" + offset_of(tv, coords, "l") + "];");
    return name;
  }
  const std::string guard = current_guard("0");
  int varying = -1;
  bool gathered = false;
  for (int64_t axis = 0; axis < tv->rank(); ++axis) {
    if (coords[axis].varies()) {
      gathered = gathered || varying >= 0 || coords[axis].per_lane;
      varying = static_cast<int>(axis);
    }
  }
  const bool along_lane_axis = varying >= 0 && !gathered && coords[varying].lane_step == 1 &&
      !at_flat_group(tv, coords) && !reads_rows_only(tv, coords);
  if (!guard.empty() && along_lane_axis && vectors_aligned_ && !updated_in_place(tv)) {
    // One predicated vector load, its address computed whether or not the
    // guard holds: behind a branch, each of a max pool's nine windows
    // waited for the load before it (one load in flight a thread).
    const std::string at = declare("Index", offset_of(tv, coords, "0"));
    note_vector_access(tv, varying);
    line(name + " = nvfuse::load_read_only_if<" + keep_in_caches(tv, varying) + ">(" +
        "reinterpret_cast<const " + array_type(type) + "*>(" + pointer + " + " + at + "), " +
        guard + ");");
    return name;
  }
  if (!guard.empty()) {
    // Under a cat or pad predicate: a predicated load, zeros where it is off.
    line("if (" + guard + ") {");
    ++indent_;
  }
  if (at_flat_group(tv, coords)) {
    const std::string at = declare("Index", "g * kVec");
    const std::string cast =
        "reinterpret_cast<const " + array_type(type) + "*>(" + pointer + " + " + at + ")";
    vector_or_lanes(tv, tv->rank() - 1, pointer + " + " + at, "Index(1)",
        name + " = " +
            (updated_in_place(tv) ? "*" + cast : "nvfuse::load_read_only<false>(" + cast + ")") +
            ";",
        name + ".val[l] = " + pointer + "[" + at + " + Index(l)];");
  } else if (reads_rows_only(tv, coords)) {
    // A value per row (a row statistic): the group's lanes are on at most
    // two rows, lane 0's and the last lane's, so two loads serve them.
    const std::string first = declare(type, pointer + "[" + offset_of(tv, coords, "0") + "]");
    const std::string last = declare(type, pointer + "[" + offset_of(tv, coords, "kVec - 1") + "]");
    line("#pragma unroll");
    line("for (int l = 0; l < kVec; ++l) " + name + ".val[l] = wraps.val[l] ? " + last + " : " +
        first + ";");
  } else if (varying < 0) {  // one element for every lane
    const std::string value = declare(type, pointer + "[" + offset_of(tv, coords, "0") + "]");
    line("#pragma unroll");
    line("for (int l = 0; l < kVec; ++l) " + name + ".val[l] = " + value + ";");
  } else if (!along_lane_axis) {
    line("#pragma unroll");
    line("for (int l = 0; l < kVec; ++l) " + name + ".val[l] = " + pointer + "[" +
        offset_of(tv, coords, "l") + "];");
  } else {
    // Consecutive lanes along one axis (the last, or another where a
    // permute walks it: a channels-last image with its channels
    // innermost): one vector load where that axis's stride is 1 and the
    // address aligned, else lane by lane.
    const std::string at = declare("Index", offset_of(tv, coords, "0"));
    const std::string stride =
        "args.stride_" + name_of_value(tv) + "[" + std::to_string(varying) + "]";
    // Inputs no output updates in place take the read-only path.
    const std::string cast =
        "reinterpret_cast<const " + array_type(type) + "*>(" + pointer + " + " + at + ")";
    vector_or_lanes(tv, varying, pointer + " + " + at, stride,
        name + " = " +
            (updated_in_place(tv)
                    ? "*" + cast
                    : "nvfuse::load_read_only<" + keep_in_caches(tv, varying) + ">(" + cast + ")") +
            ";",
        name + ".val[l] = " + pointer + "[" + at + " + Index(l) * " + stride + "];");
  }
  if (!guard.empty()) {
    --indent_;
    line("} else {");
    line("  " + name + " = " + array_type(type) + "{};");
    line("}");
  }
  return name;
}

bool CoordinateValues::updated_in_place(const TensorView* tv) const {
  for (const Val* out : fusion_.outputs()) {
    if (fusion_.aliased_input(out) == tv) {
      return true;
    }
  }
  return false;
}

int64_t CoordinateValues::output_rank() const {
  int64_t rank = 0;
  for (const Val* out : fusion_.outputs()) {
    if (out->is<TensorView>()) {
      rank = std::max(rank, out->as<TensorView>()->rank());
    }
  }
  return rank;
}

std::string CoordinateValues::keep_in_caches(const TensorView* tv, int64_t lane_axis) const {
  const bool read_again = tv->rank() < output_rank() || lane_axis + 1 != tv->rank();
  return read_again ? "true" : "false";
}

void CoordinateValues::note_vector_access(const TensorView* tv, int64_t lane_axis) {
  const VectorAccess access{tv, lane_axis};
  if (std::find(vector_accesses_.begin(), vector_accesses_.end(), access) ==
      vector_accesses_.end()) {
    vector_accesses_.push_back(access);
  }
}

void CoordinateValues::vector_or_lanes(const TensorView* tv, int64_t lane_axis,
    const std::string& address, const std::string& stride, const std::string& vector_statement,
    const std::string& lane_statement) {
  note_vector_access(tv, lane_axis);
  if (vectors_aligned_) {
    line(vector_statement);
    return;
  }
  line("if (nvfuse::vector_ok<kVec>(" + address + ", " + stride + ")) {");
  line("  " + vector_statement);
  line("} else {");
  line("#pragma unroll");
  line("  for (int l = 0; l < kVec; ++l) " + lane_statement);
  line("}");
}

void CoordinateValues::store(
    const TensorView* tv, const std::vector<LaneCoord>& coords, const std::string& value) {
  const std::string pointer = "args." + name_of_value(tv);
  const int last = static_cast<int>(tv->rank()) - 1;
  if (at_flat_group(tv, coords)) {
    const std::string at = declare("Index", "g * kVec");
    vector_or_lanes(tv, tv->rank() - 1, pointer + " + " + at, "Index(1)",
        "*reinterpret_cast<" + array_type(cuda_type_of(tv->dtype())) + "*>(" + pointer + " + " +
            at + ") = " + value + ";",
        pointer + "[" + at + " + Index(l)] = " + value + ".val[l];");
    return;
  }
  if (last < 0 || coords[last].lane_step != 1) {
    line("#pragma unroll");
    line("for (int l = 0; l < kVec; ++l) " + pointer + "[" + offset_of(tv, coords, "l") +
        "] = " + value + ".val[l];");
    return;
  }
  const std::string at = declare("Index", offset_of(tv, coords, "0"));
  const std::string stride = "args.stride_" + name_of_value(tv) + "[" + std::to_string(last) + "]";
  vector_or_lanes(tv, last, pointer + " + " + at, stride,
      "*reinterpret_cast<" + array_type(cuda_type_of(tv->dtype())) + "*>(" + pointer + " + " + at +
          ") = " + value + ";",
      pointer + "[" + at + " + Index(l) * " + stride + "] = " + value + ".val[l];");
}

std::string CoordinateValues::compute(const TensorView* tv, const std::vector<LaneCoord>& coords) {
  if (fusion_.is_input(tv)) {
    if (tv->is_cpu_scalar()) {
      const std::string value = arg_text_(tv);
      return lanes(cuda_type_of(tv->dtype()), [&](const std::string&) { return value; });
    }
    return load(tv, coords);
  }
  const Expr& def = *tv->definition();
  const std::string type = cuda_type_of(tv->dtype());
  const std::string comment = print_expr(def);
  std::vector<LaneCoord> in = coords;
  switch (def.kind()) {
    case ExprKind::PointwiseOp:
    case ExprKind::CastOp:
    case ExprKind::BroadcastOp:
    case ExprKind::ExpandOp:
      return elementwise(def, coords);
    case ExprKind::PadOp:
      return pad(*def.as<PadOp>(), coords);
    case ExprKind::CatOp:
      return cat(*def.as<CatOp>(), coords);
    case ExprKind::SliceOp:
      return value_at(tensor_input(def, 0), slice_coords(*def.as<SliceOp>(), coords));
    case ExprKind::ReshapeOp:
      return value_at(tensor_input(def, 0), reshape_coords(*def.as<ReshapeOp>(), coords));
    case ExprKind::PermuteOp: {
      const auto& dims = def.as<PermuteOp>()->dims();
      for (size_t i = 0; i < dims.size(); ++i) {
        in[dims[i]] = coords[i];
      }
      return value_at(tensor_input(def, 0), in);
    }
    case ExprKind::SqueezeOp:
      for (int64_t d : def.as<SqueezeOp>()->dims()) {
        in.insert(in.begin() + d, uniform("0"));
      }
      return value_at(tensor_input(def, 0), in);
    case ExprKind::SelectOp: {
      const int64_t dim = def.as<SelectOp>()->dim();
      in.insert(in.begin() + dim,
          uniform(declare("Index",
              "Index(nvfuse::index_in_range(" + int64_of(def.input(1)) + ", " +
                  int64_of(extent_of(def.input(0), dim)) + "))")));
      return value_at(tensor_input(def, 0), in);
    }
    case ExprKind::IndexSelectOp: {
      const int64_t dim = def.as<IndexSelectOp>()->dim();
      return indexed(def, tensor_input(def, 1), {coords[dim]}, coords, dim);
    }
    case ExprKind::GatherOp:
      return indexed(def, tensor_input(def, 1), coords, coords, def.as<GatherOp>()->dim());
    case ExprKind::EmbeddingFwdOp: {
      // out[..., j] = weight[indices[...], j]
      std::vector<LaneCoord> rows(coords.begin(), coords.end() - 1);
      const std::string index = value_at(tensor_input(def, 0), rows);
      return value_at(
          tensor_input(def, 1), {index_lanes(index, extent_of(def.input(1), 0)), coords.back()});
    }
    case ExprKind::TriuOp: {
      const std::string value = value_at(tensor_input(def, 0), coords);
      const size_t r = coords.size();
      const std::string diagonal = int64_of(def.input(1));
      return lanes(
          type,
          [&](const std::string& l) {
            return "(nvfuse::int64(" + coords[r - 1].lane(l) + ") - nvfuse::int64(" +
                coords[r - 2].lane(l) + ") >= " + diagonal + ") ? " + value + ".val[" + l +
                "] : nvfuse::cast<" + type + ">(0)";
          },
          comment);
    }
    case ExprKind::FullOp: {
      const std::string value = scalar_as(def.input(0), tv->dtype());
      return lanes(
          type, [&](const std::string&) { return value; }, comment);
    }
    case ExprKind::IotaOp:
      return lanes(
          type,
          [&](const std::string& l) {
            return iota_value(*def.as<IotaOp>(), coords[0].lane(l), arg_text_);
          },
          comment);
    case ExprKind::RngOp:
      return random(*def.as<RngOp>(), coords);
    default:
      NVFUSE_ASSERT(false, "the coordinate kernel cannot compute ", comment);
      return "";
  }
}

std::string CoordinateValues::elementwise(const Expr& expr, const std::vector<LaneCoord>& coords) {
  std::unordered_map<const Val*, std::string> names;
  for (const Val* v : expr.inputs()) {
    if (!v->is<TensorView>()) {
      continue;
    }
    const auto* operand = v->as<TensorView>();
    std::vector<LaneCoord> at;
    if (expr.is<BroadcastOp>()) {
      const auto& is_new = expr.as<BroadcastOp>()->is_broadcast_dim();
      for (size_t i = 0; i < is_new.size(); ++i) {
        if (!is_new[i]) {
          at.push_back(coords[i]);
        }
      }
    } else if (operand->rank() != 0) {
      at = coords;
    }
    names[v] = value_at(operand, at);
  }
  return elementwise_of(expr, names);
}

std::string CoordinateValues::elementwise_of(
    const Expr& expr, const std::unordered_map<const Val*, std::string>& names) {
  return lanes(
      cuda_type_of(expr.output(0)->dtype()),
      [&](const std::string& l) {
        return expr_value(expr, [&](const Val* v) {
          return v->is<TensorView>() ? "nvfuse::lane_of(" + names.at(v) + ", " + l + ")"
                                     : arg_text_(v);
        });
      },
      print_expr(expr));
}

std::vector<LaneCoord> CoordinateValues::slice_coords(
    const SliceOp& expr, const std::vector<LaneCoord>& coords) {
  std::vector<LaneCoord> in;
  for (size_t axis = 0; axis < coords.size(); ++axis) {
    const Val* start = expr.input(1 + 3 * axis);
    const int64_t step = *expr.input(3 + 3 * axis)->as<Scalar>()->constant_int();
    LaneCoord c = coords[axis];
    std::string first;
    if (!start->as<Scalar>()->is_constant_int(0)) {
      if (c.varies() && !c.per_lane) {
        // The lanes read from start on: a vector there is aligned when the
        // (normalized) start is a multiple of kVec.
        alignment_terms_.push_back(start->as<Scalar>());
        alignment_terms_.push_back(extent_of(expr.input(0), static_cast<int64_t>(axis)));
      }
      first = declare("Index",
          "Index(nvfuse::normalized_index(" + int64_of(start) + ", " +
              int64_of(extent_of(expr.input(0), static_cast<int64_t>(axis))) + "))");
    }
    if (c.per_lane) {
      const std::string source = c.base;
      c.base = lanes("Index", [&](const std::string& l) {
        return (first.empty() ? "" : first + " + ") + source + ".val[" + l + "] * " +
            std::to_string(step);
      });
    } else {
      if (step != 1) {
        c.base = "(" + c.base + ") * " + std::to_string(step);
        c.lane_step *= step;
      }
      if (!first.empty()) {
        c.base = "(" + first + " + " + c.base + ")";
        c.aligned = false;
        c.shifts.push_back(start->as<Scalar>());
        c.shifts.push_back(extent_of(expr.input(0), static_cast<int64_t>(axis)));
      }
    }
    in.push_back(c);
  }
  return in;
}

std::string CoordinateValues::padded_in(
    const LaneCoord& c, const Val* before, const std::string& l) const {
  return c.lane(l) + " - Index(" + int64_of(before) + ")";
}

std::string CoordinateValues::pad(const PadOp& expr, const std::vector<LaneCoord>& coords) {
  const TensorView* operand = tensor_input(expr, 0);
  std::vector<size_t> padded;
  bool per_lane = false;
  for (size_t axis = 0; axis < coords.size(); ++axis) {
    if (!expr.input(2 + 2 * axis)->as<Scalar>()->is_constant_int(0) ||
        !expr.input(3 + 2 * axis)->as<Scalar>()->is_constant_int(0)) {
      padded.push_back(axis);
      per_lane = per_lane || coords[axis].per_lane;
    }
  }
  if (padded.empty()) {
    return value_at(operand, coords);
  }
  // Whether lane l's element is inside the operand.
  const auto inside = [&](const std::string& l) {
    std::string text;
    for (size_t axis : padded) {
      const std::string at = padded_in(coords[axis], expr.input(2 + 2 * axis), l);
      const std::string extent = "Index(" + int64_of(extent_of(operand, int64_t(axis))) + ")";
      text +=
          std::string(text.empty() ? "" : " && ") + "(" + at + ") >= 0 && (" + at + ") < " + extent;
    }
    return text;
  };
  std::vector<LaneCoord> in = coords;
  for (size_t axis : padded) {
    const Val* before = expr.input(2 + 2 * axis);
    LaneCoord& c = in[axis];
    if (c.per_lane) {
      // Coordinates that differ lane by lane: each lane tests its own.
      const LaneCoord source = c;
      c.base = lanes("Index", [&](const std::string& l) { return padded_in(source, before, l); });
    } else {
      if (!per_lane) {  // the predicate is lane 0's for every lane
        share_predicate(c, {before->as<Scalar>(), extent_of(operand, int64_t(axis))});
      }
      c.base = declare("Index", padded_in(c, before, "0"));
    }
  }
  const std::string predicate = per_lane ? lanes("bool", inside, print_expr(expr))
                                         : declare("bool", inside("0"), print_expr(expr));
  open_guard(predicate, per_lane, /*pad=*/true);
  const std::string value = value_at(operand, in);
  close_guard();
  const std::string fill = scalar_as(expr.input(1), expr.output(0)->dtype());
  return lanes(cuda_type_of(expr.output(0)->dtype()), [&](const std::string& l) {
    return (per_lane ? predicate + ".val[" + l + "]" : predicate) + " ? " + value + ".val[" + l +
        "] : " + fill;
  });
}

void CoordinateValues::open_guard(const std::string& predicate, bool per_lane, bool pad) {
  guards_.push_back(Guard{predicate, per_lane, pad, scopes_.size()});
  scopes_.emplace_back();
}

void CoordinateValues::close_guard() {
  guards_.pop_back();
  scopes_.pop_back();
}

std::string CoordinateValues::current_guard(const std::string& l) const {
  std::string all;
  for (const Guard& g : guards_) {
    all += (all.empty() ? "" : " && ") + g.predicate + (g.per_lane ? ".val[" + l + "]" : "");
  }
  return all;
}

bool CoordinateValues::guarded_per_lane() const {
  return std::any_of(guards_.begin(), guards_.end(), [](const Guard& g) { return g.per_lane; });
}

std::string CoordinateValues::indexed(const Expr& expr, const TensorView* index,
    const std::vector<LaneCoord>& index_coords, const std::vector<LaneCoord>& coords, int64_t dim) {
  const std::string value = value_at(index, index_coords);
  std::vector<LaneCoord> in = coords;
  in[dim] = index_lanes(value, extent_of(expr.input(0), dim));
  return value_at(tensor_input(expr, 0), in);
}

LaneCoord CoordinateValues::index_lanes(const std::string& values, const Val* extent) {
  const std::string bound = int64_of(extent);
  return LaneCoord{lanes("Index",
                       [&](const std::string& l) {
                         return "Index(nvfuse::index_in_range(nvfuse::int64(" + values + ".val[" +
                             l + "]), " + bound + "))";
                       }),
      0, true};
}

std::string CoordinateValues::random(const RngOp& expr, const std::vector<LaneCoord>& coords) {
  const auto* out = expr.output(0)->as<TensorView>();
  // The element's position in the tensor's row-major order: what the
  // reference evaluator numbers it.
  auto linear = [&](const std::string& l) {
    std::string text = "nvfuse::uint64(0)";
    for (size_t axis = 0; axis < coords.size(); ++axis) {
      text = "(" + text + " * nvfuse::uint64(" +
          int64_of(extent_of(out, static_cast<int64_t>(axis))) + ") + nvfuse::uint64(" +
          coords[axis].lane(l) + "))";
    }
    return text;
  };
  const std::string i = lanes("nvfuse::uint64", linear);
  const PhiloxKey key = philox_key_of(expr, arg_text_, drawn_philox_key(drawn_, expr, graph_rng_));
  const std::string type = cuda_type_of(out->dtype());
  std::string u;
  if (uses_unit_floats(expr)) {
    u = "v" + std::to_string(next_name_++);
    line(array_type("float") + " " + u + ";");
    // Lanes at consecutive positions share Philox blocks: only the last
    // axis moves with them.
    bool consecutive = !coords.empty() && coords.back().lane_step == 1 && !coords.back().per_lane;
    for (size_t axis = 0; axis + 1 < coords.size(); ++axis) {
      consecutive = consecutive && !coords[axis].varies();
    }
    if (consecutive) {
      line("nvfuse_philox::unit_floats<kVec>(" + key.seed + ", " + key.offset + ", " + i +
          ".val[0], 1, " + u + ".val);");
    } else {
      line("#pragma unroll");
      line("for (int l = 0; l < kVec; ++l) " + u + ".val[l] = nvfuse_philox::uniform_float(" +
          key.seed + ", " + key.offset + ", " + i + ".val[l]);");
    }
  }
  return lanes(
      type,
      [&](const std::string& l) {
        return random_value(expr, i + ".val[" + l + "]", key, u + ".val[" + l + "]", arg_text_);
      },
      print_expr(expr));
}

}  // namespace nvfuse
