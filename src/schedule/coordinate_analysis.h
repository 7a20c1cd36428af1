// canSchedule for the coordinate scheduler: fusions whose outputs are
// computed element by element from their coordinates, where an operand may
// be read at other coordinates than its result (slice, pad, cat, select,
// index_select, gather, take_along_axis, embedding, permute, squeeze,
// reshape) or a
// value made from the coordinates alone (full, iota, uniform, normal, triu),
// prefix sums (cumsum) along one axis, and a scatter (walking its index
// tensor's elements, each written into a copy of the scatter's input).
// The pointwise scheduler, which vectorizes and merges axes, keeps every
// fusion it accepts; this one takes the rest of the reduction-free fusions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/all_exprs.h"
#include "ir/fusion.h"

namespace nvfuse {

struct CoordinateAnalysis {
  // Tensors the kernel loads through a pointer.
  std::vector<const TensorView*> inputs;
  // Tensors it writes (fusion outputs that are not inputs), each once; all
  // have one shape, the iteration space.
  std::vector<const TensorView*> outputs;
  // Values it takes by value: CPU scalar tensors, symbolic scalars its
  // exprs read, and the extents its index arithmetic needs.
  std::vector<const Val*> value_inputs;
  // Random ops without an explicit seed: each launch passes them a
  // (seed, offset) pair drawn from torch's generator.
  std::vector<const RngOp*> drawn_random_ops;
  bool has_random_ops = false;
  // Cumsums (prefix sums), all along `scan_axis` of the iteration space,
  // in run order: the kernel walks that axis (codegen/scan_codegen.h);
  // -1 when there are none.
  std::vector<const CumsumOp*> scans;
  int64_t scan_axis = -1;
  // The fusion's one scatter, out = in.scatter(dim, index, src), or null.
  // The iteration space is then its index tensor's: the kernel computes
  // index and src at each of its elements and writes src's value into
  // `out` at the element's coordinates with `dim` replaced by the index.
  // `in` is a fusion input, which the executor copies into `out` first.
  const ScatterOp* scatter = nullptr;
};

// True for the exprs this scheduler adds over the pointwise one (cumsum
// included: a fusion with one walks its axis instead).
bool is_coordinate_expr(const Expr& expr);

// True for the coordinate exprs whose element is a function of its position
// alone (iota, random ops): the reduction kernels compute them too.
bool is_position_expr(const Expr& expr);

// The scalars (operands and extents) the generated code reads for `expr`,
// constants included; the analysis passes the non-constant ones by value.
std::vector<const Scalar*> scalars_read_by(const Expr& expr);

// The analysis, or nullopt with the reason in `why_not`.
std::optional<CoordinateAnalysis> analyze_coordinates(const Fusion& fusion, std::string* why_not);

}  // namespace nvfuse
