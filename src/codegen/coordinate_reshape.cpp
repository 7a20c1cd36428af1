// A reshape in the coordinate kernel: the output element at (c_0..c_m-1)
// is the input element at the same row-major position
// L = ((c_0 * E_1 + c_1) * E_2 + ...), unraveled over the input's extents
// F_j (d_j = L / (F_j+1 * ... ) % F_j). A reshape of a value the kernel
// computes costs this index arithmetic instead of a round trip through
// memory between two kernels.
#include "codegen/coordinate_values.h"

#include "ir/printer.h"

namespace nvfuse {

std::vector<LaneCoord> CoordinateValues::reshape_coords(
    const ReshapeOp& expr, const std::vector<LaneCoord>& coords) {
  // Flat lanes would each unravel their own position: a division per lane.
  lanes_may_be_flat_ = false;
  const auto* in = expr.input(0)->as<TensorView>();
  const auto* out = expr.output(0)->as<TensorView>();
  const int64_t out_rank = out->rank();
  const int64_t in_rank = in->rank();
  // The lanes walk the output's last axis from an aligned coordinate (or
  // do not move): with both last extents multiples of kVec, they stay on
  // one input row, consecutive along its last axis, and the arithmetic
  // runs once for all of them. Otherwise each lane unravels its own
  // position (its loads are then lane by lane).
  bool shared = true;
  for (int64_t axis = 0; axis < out_rank; ++axis) {
    const LaneCoord& c = coords[axis];
    const bool last = axis + 1 == out_rank;
    shared = shared && !c.per_lane && (c.lane_step == 0 || (last && c.lane_step == 1 && c.aligned));
  }
  const auto linear_at = [&](const std::string& l) {
    std::string text = "Index(0)";
    for (int64_t axis = 0; axis < out_rank; ++axis) {
      text = axis == 0 ? coords[0].lane(l)
                       : "(" + text + ") * Index(" + int64_of(extent_of(out, axis)) + ") + " +
              coords[axis].lane(l);
    }
    return text;
  };
  std::vector<LaneCoord> result(in_rank);
  if (shared) {
    const bool moves = out_rank > 0 && coords.back().varies();
    if (moves) {
      share_predicate(coords.back(), {extent_of(out, out_rank - 1), extent_of(in, in_rank - 1)});
    }
    std::string rest = declare("Index", linear_at("0"), print_expr(expr));
    for (int64_t axis = in_rank - 1; axis >= 0; --axis) {
      const std::string extent = "Index(" + int64_of(extent_of(in, axis)) + ")";
      result[axis] =
          LaneCoord{axis == 0 ? rest : declare("Index", rest + " % " + extent), 0, false};
      if (axis > 0) {
        rest = declare("Index", rest + " / " + extent);
      }
    }
    if (moves) {
      result[in_rank - 1].lane_step = 1;
    }
    return result;
  }
  std::string rest = lanes("Index", linear_at, print_expr(expr));
  for (int64_t axis = in_rank - 1; axis >= 0; --axis) {
    const std::string extent = "Index(" + int64_of(extent_of(in, axis)) + ")";
    const std::string source = rest;
    result[axis] = LaneCoord{axis == 0
            ? source
            : lanes("Index",
                  [&](const std::string& l) { return source + ".val[" + l + "] % " + extent; }),
        0, true};
    if (axis > 0) {
      rest = lanes(
          "Index", [&](const std::string& l) { return source + ".val[" + l + "] / " + extent; });
    }
  }
  return result;
}

}  // namespace nvfuse
