// The statements that compute one tensor's value at given coordinates, for
// the coordinate kernel. Each thread handles kVec lanes: consecutive
// elements along the innermost iteration axis. Walking back from an
// output, each operand is computed at the coordinates its consumer reads it
// at (shifted by a slice or pad, chosen by cat, looked up through an index
// tensor...), as an nvfuse::Array of kVec lane values. A tensor read at two
// coordinate sets is computed twice; one read at the same set once per
// scope. Under a pad or cat predicate (a guard) each load is predicated on
// it, so no element outside an operand is read; the part's arithmetic runs
// for every lane and a select picks the lanes' values. Branching instead
// made a warp whose lanes straddle a cat boundary run both parts one after
// the other, each waiting for its own load (RoPE's halves).
//
// A predicate is evaluated once for all lanes (at lane 0). That is exact
// when the boundaries it tests along the lane axis are multiples of kVec:
// the generator lists those extents and widths (lane_multiples) for the
// scheduler to check, and says when lanes cannot share predicates at all
// (lanes_share_predicates false: the kernel must use kVec = 1).
//
// A read or write of kVec consecutive elements of a tensor's last axis is
// one vector access where the address is aligned. By default each access
// checks that at run time and falls back to lane-by-lane; the compiler
// predicates that fallback rather than branching around it, so every
// access paid its ~25 instructions (a third of a bf16 RoPE kernel's). With
// `vectors_aligned` the host has checked every access (vector_accesses at
// aligned addresses, unit stride along their lane axis and whole vectors
// along the others, alignment_terms multiples of kVec) and only the
// vector statement is emitted.
#pragma once

#include <functional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/all_exprs.h"
#include "ir/fusion.h"

namespace nvfuse {

// Operand i of `expr`, a tensor.
inline const TensorView* tensor_input(const Expr& expr, size_t i) {
  return expr.input(i)->as<TensorView>();
}

// The extent of `tv`'s logical axis `axis`.
inline Scalar* extent_of(const Val* tv, int64_t axis) {
  return tv->as<TensorView>()->logical()[axis]->logical_extent();
}

// One coordinate of a tensor read: lane l's value is
// `base + l * lane_step`, or `base.val[l]` for a per-lane index array.
struct LaneCoord {
  std::string base;
  int64_t lane_step = 0;
  bool per_lane = false;
  // Lane 0's coordinate is a multiple of kVec (the iteration's, shifted by
  // lane multiples only; a slice start is not one). A reshape needs it to
  // keep the lanes on one input row.
  bool aligned = true;
  // The slice starts (and the sliced extents, which normalize a negative
  // start) added to lane 0's coordinate on the way from the iteration: a
  // predicate below a slice shares lane 0's value only if the shift, too,
  // is a multiple of kVec.
  std::vector<const Scalar*> shifts;

  std::string lane(const std::string& l) const;
  bool varies() const { return per_lane || lane_step != 0; }
};

// A tensor the kernel reads or writes as vectors along `axis`.
struct VectorAccess {
  const TensorView* tv = nullptr;
  int64_t axis = 0;
  bool operator==(const VectorAccess& other) const { return tv == other.tv && axis == other.axis; }
};

class CoordinateValues {
 public:
  // A cat of at most this many parts computes every part and selects;
  // more parts branch (each part's work grows the select form's cost).
  static constexpr size_t kSelectedCatParts = 4;

  // `arg_text(v)`: how the kernel reads a by-value input (`args.<name>`).
  // `drawn`: the random ops whose (seed, offset) the kernel takes at launch
  // (`graph_rng`: from torch's graph-safe state, codegen/index_values.h).
  CoordinateValues(const Fusion& fusion, int vector_width,
      std::function<std::string(const Val*)> arg_text, std::vector<const RngOp*> drawn,
      bool vectors_aligned = false, bool graph_rng = false);

  // The name of a local Array holding `tv` at `coords` (one per logical
  // axis), after emitting what computes it.
  std::string value_at(const TensorView* tv, std::vector<LaneCoord> coords);
  // `dense` are laid out row-major over the iteration space, whose group
  // `g` is at `iteration` (CoordinateParams::dense_tensors): their
  // offsets start from the group's linear position, g * kVec, plus the
  // shift of each axis read away from the group's coordinate (the rotated
  // half of RoPE's x: one). The address of a read at the group's own
  // coordinates waits on no division.
  // With `flat` the group's lanes are consecutive in that order, each with
  // its own coordinates (CoordinateParams::flat_lanes; the kernel's bool
  // Array `wraps` says which lanes are past the end of lane 0's row): a
  // dense tensor read or written at the iteration's coordinates is one
  // vector there.
  void lay_out_densely(
      std::vector<const TensorView*> dense, std::vector<LaneCoord> iteration, bool flat = false);
  // Stores `value` (an Array) into output `tv` at `coords`.
  void store(const TensorView* tv, const std::vector<LaneCoord>& coords, const std::string& value);
  // The writes of a scatter for its index tensor's elements at `coords`
  // (coordinate_scatter.cpp): into the output, or with `into_row` into the
  // output row staged in shared memory (`nvfuse_row`).
  void scatter(const ScatterOp& expr, const std::vector<LaneCoord>& coords, bool into_row);
  // For the scan kernel (scan_codegen.cpp): `name` (an Array) is `tv` at
  // `coords` from here to the end of the current block; a statement of
  // its own; a block (`header {`, e.g. a loop) with a scope of its own
  // for the values computed in it; a guard for the loads of the values
  // computed until close_guard (zeros where `predicate` is false).
  void provide(const TensorView* tv, std::vector<LaneCoord> coords, const std::string& name);
  void statement(const std::string& text) { line(text); }
  void open_block(const std::string& header);
  void close_block();
  // `per_lane`: `predicate` is an Array of a bool per lane. `pad`: it is a
  // pad's (it tests the padded axes alone: an element at the iteration's
  // own coordinates exists whatever it says; a cat part's may not).
  void open_guard(const std::string& predicate, bool per_lane = false, bool pad = false);
  void close_guard();
  // A fresh local name.
  std::string fresh_name() { return "v" + std::to_string(next_name_++); }
  std::string code() const { return code_.str(); }
  // The kernel's text for scalar `s` as an int64.
  std::string int64_of(const Val* s) const;

  const std::vector<const Scalar*>& lane_multiples() const { return lane_multiples_; }
  bool lanes_share_predicates() const { return lanes_share_predicates_; }
  // Nothing generated needs the lanes on one row (LaneRequirements::flat).
  bool lanes_may_be_flat() const { return lanes_may_be_flat_; }
  // The tensors read or written as vectors (each with the axis its lanes
  // run along: the last, or another where a permute walks it), and the
  // shifts of their lane coordinates that are not lane_multiples already
  // (slice starts and the extents they normalize against).
  const std::vector<VectorAccess>& vector_accesses() const { return vector_accesses_; }
  const std::vector<const Scalar*>& alignment_terms() const { return alignment_terms_; }

 private:
  // `coords` with "0" on the broadcast axes of `tv`: the key of a value.
  std::vector<LaneCoord> on_broadcast_axes_zero(
      const TensorView* tv, std::vector<LaneCoord> coords) const;
  std::string compute(const TensorView* tv, const std::vector<LaneCoord>& coords);
  // Whether `coords` (broadcast axes zeroed) are the iteration's own
  // coordinates or 0 on every axis: under pads alone every element they
  // name exists, so a value read there needs no guard.
  bool at_iteration_coordinates(const std::vector<LaneCoord>& coords) const;
  // `tv` at `coords` computed with no guard and kept in the block around
  // the guards, so that later guards reuse it (the per-channel scale of a
  // batch norm under each window of a max pool, a pad each).
  std::string unguarded(
      const TensorView* tv, const std::vector<LaneCoord>& coords, const std::string& key);
  std::string load(const TensorView* tv, const std::vector<LaneCoord>& coords);
  std::string elementwise(const Expr& expr, const std::vector<LaneCoord>& coords);
  // `expr` (elementwise) lane by lane on its tensor operands' Arrays,
  // named in `names`.
  std::string elementwise_of(
      const Expr& expr, const std::unordered_map<const Val*, std::string>& names);
  std::string pad(const PadOp& expr, const std::vector<LaneCoord>& coords);
  std::string cat(const CatOp& expr, const std::vector<LaneCoord>& coords);
  // The cat of more than kSelectedCatParts parts: an if/else chain on `at`
  // (the lane-0 coordinate along the cat axis), each part computed in its
  // branch.
  std::string cat_branches(const CatOp& expr, const std::string& at,
      const std::vector<std::string>& starts,
      const std::function<std::vector<LaneCoord>(size_t)>& part_coords);
  // The parts of a cat whose parts all read one tensor (each through at
  // most a slice and one-tensor pointwise ops: RoPE's rotate_half,
  // cat(-x[..., h:], x[..., :h])): the tensor read once, unguarded, at the
  // coordinates of the part each lane is in (`in_part[k]`, a bool local,
  // for every part but the last),
  // then each part's ops on it. Empty where the parts read otherwise.
  // Guarded reads of both halves cost RoPE a second load, its widening
  // and the zeros of the lanes it skips.
  std::vector<std::string> parts_of_one_read(const CatOp& expr,
      const std::vector<std::string>& in_part,
      const std::function<std::vector<LaneCoord>(size_t)>& part_coords);
  // Values computed between open_guard and close_guard are valid only
  // where `predicate` holds (a bool local): loads there are predicated on
  // it (and on the enclosing guards), and the values stay in their scope.
  // current_guard(l) is lane l's (per-lane guards read their lane);
  // current_guard() is shared by the lanes, "" when a guard is per lane
  // or there is none.
  std::string current_guard(const std::string& l) const;
  std::string current_guard() const;
  bool guarded_per_lane() const;
  // `tv` is laid out densely and read at the iteration's own coordinates
  // with flat lanes: its group is the kVec elements from g * kVec on.
  bool at_flat_group(const TensorView* tv, const std::vector<LaneCoord>& coords) const;
  // With flat lanes, `tv` is read at coordinates that move only along the
  // iteration's outer axes: the same on a row (the lanes that wrap past
  // its end, `wraps`, are on the next).
  bool reads_rows_only(const TensorView* tv, const std::vector<LaneCoord>& coords) const;
  // The coordinate of the pad's input along a padded axis, for lane l.
  std::string padded_in(const LaneCoord& c, const Val* before, const std::string& l) const;
  std::string indexed(const Expr& expr, const TensorView* index,
      const std::vector<LaneCoord>& index_coords, const std::vector<LaneCoord>& coords,
      int64_t dim);
  // Per-lane coordinates from the index Array `values` (any integer type),
  // wrapped and clamped into [0, extent).
  LaneCoord index_lanes(const std::string& values, const Val* extent);
  std::string random(const RngOp& expr, const std::vector<LaneCoord>& coords);
  std::vector<LaneCoord> slice_coords(const SliceOp& expr, const std::vector<LaneCoord>& coords);
  // Where a reshape's element at `coords` is in its input: its row-major
  // position in the output, unraveled over the input's extents
  // (coordinate_reshape.cpp).
  std::vector<LaneCoord> reshape_coords(
      const ReshapeOp& expr, const std::vector<LaneCoord>& coords);
  // A predicate on `coord` evaluated at lane 0 for every lane: notes what
  // must hold for that (boundaries at multiples of kVec).
  void share_predicate(const LaneCoord& coord, std::vector<const Scalar*> boundaries);

  // An input no output updates in place, of fewer axes than the outputs or
  // read along another axis than its last (through a permute: a pooling
  // window's rows), is read again: its lines stay in the caches
  // (nvfuse::load_read_only's kKeep), "true" or "false".
  std::string keep_in_caches(const TensorView* tv, int64_t lane_axis) const;
  // `tv` read as vectors along `lane_axis`: the host checks their alignment.
  void note_vector_access(const TensorView* tv, int64_t lane_axis);
  // `if (vector_ok(address, stride)) vector_statement; else` the lane
  // statement for each lane l; only the vector statement when the host
  // checked the alignment.
  void vector_or_lanes(const TensorView* tv, int64_t lane_axis, const std::string& address,
      const std::string& stride, const std::string& vector_statement,
      const std::string& lane_statement);
  // The most axes of a fusion output: the iteration space's rank.
  int64_t output_rank() const;
  // Some output updates `tv` (an input) in place.
  bool updated_in_place(const TensorView* tv) const;
  // The offset of `tv`'s element for lane `l` (a lane expression).
  std::string offset_of(
      const TensorView* tv, const std::vector<LaneCoord>& coords, const std::string& l) const;
  // `const <type> <fresh> = <value>;`; the fresh name.
  std::string declare(
      const std::string& type, const std::string& value, const std::string& comment = "");
  // `nvfuse::Array<T, kVec> <fresh>;` with lane l set to lane_value(l).
  std::string lanes(const std::string& element_type,
      const std::function<std::string(const std::string&)>& lane_value,
      const std::string& comment = "");
  std::string array_type(const std::string& element_type) const {
    return "nvfuse::Array<" + element_type + ", kVec>";
  }
  std::string scalar_as(const Val* s, DataType dtype) const;
  void line(const std::string& text);
  void open_scope();
  void close_scope();

  const Fusion& fusion_;
  const int vector_width_;
  std::function<std::string(const Val*)> arg_text_;
  std::vector<const RngOp*> drawn_;
  bool graph_rng_ = false;
  std::ostringstream code_;
  int indent_ = 1;
  int next_name_ = 0;
  // (tensor, coordinates) -> local, one map per open branch or guard.
  std::vector<std::unordered_map<std::string, std::string>> scopes_;
  struct Guard {
    std::string predicate;
    bool per_lane = false;
    bool pad = false;
    // The index of its scope in scopes_ (its locals are declared in the
    // block around it, which no guard opens).
    size_t scope = 0;
  };
  std::vector<Guard> guards_;
  bool lanes_may_be_flat_ = true;
  bool flat_ = false;
  std::vector<const Scalar*> lane_multiples_;
  bool lanes_share_predicates_ = true;
  const bool vectors_aligned_;
  std::vector<VectorAccess> vector_accesses_;
  std::vector<const TensorView*> dense_;
  std::vector<LaneCoord> iteration_;
  std::vector<const Scalar*> alignment_terms_;
};

}  // namespace nvfuse
