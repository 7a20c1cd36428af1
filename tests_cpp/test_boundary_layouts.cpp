// The layout a cut fusion's boundary tensors are written in
// (segment/boundary_layouts.h): the stride order the fusion's inputs and
// outputs of the boundary's rank and extents agree on, else row-major.
#include <gtest/gtest.h>

#include "fusion_builders.h"
#include "ir/fusion.h"
#include "ops/pointwise.h"
#include "segment/boundary_layouts.h"

namespace nvfuse {
namespace {

const std::vector<int64_t> kChannelsLast = {0, 2, 3, 1};  // N, H, W, C outermost first

void lay_out(TensorView* tv, const std::vector<int64_t>& order) {
  std::vector<IterDomain*> allocation;
  for (int64_t axis : order) {
    allocation.push_back(tv->logical()[axis]);
  }
  tv->set_allocation_domain(allocation, TensorDomain::contiguous_for(allocation));
}

TensorView* op(OpType type, std::vector<Val*> operands) {
  return pointwise(type, std::move(operands))->as<TensorView>();
}

// x (laid out by `input_order`) -> sin -> boundary -> cos -> output
// (laid out by `output_order`, empty for row-major); returns the boundary.
TensorView* chain(
    Fusion& f, const std::vector<int64_t>& input_order, const std::vector<int64_t>& output_order) {
  TensorView* x = testing::concrete_input(f, {8, 16, 5, 6}, DataType::Float);
  lay_out(x, input_order);
  TensorView* boundary = op(OpType::sin, {x});
  TensorView* out = op(OpType::cos, {boundary});
  f.add_output(out);
  if (!output_order.empty()) {
    lay_out(out, output_order);
  }
  return boundary;
}

TEST(BoundaryLayouts, TheLayoutTheFusionsTensorsAgreeOnIsTheBoundarys) {
  Fusion f;
  TensorView* boundary = chain(f, kChannelsLast, kChannelsLast);
  EXPECT_EQ(boundary_allocation_order(f, *boundary), kChannelsLast);
}

TEST(BoundaryLayouts, DisagreeingOrRowMajorTensorsLeaveItRowMajor) {
  Fusion disagree;
  EXPECT_EQ(boundary_allocation_order(disagree, *chain(disagree, kChannelsLast, {0, 1, 2, 3})),
      std::nullopt);
  Fusion row_major;
  EXPECT_EQ(
      boundary_allocation_order(row_major, *chain(row_major, {0, 1, 2, 3}, {})), std::nullopt);
}

TEST(BoundaryLayouts, TensorsOfOtherExtentsHaveNoSay) {
  // A row-major weight of the same rank but other constant sizes does not
  // outvote the channels-last activations.
  Fusion f;
  TensorView* boundary = chain(f, kChannelsLast, kChannelsLast);
  TensorView* weight = testing::concrete_input(f, {32, 16, 3, 3}, DataType::Float);
  f.add_output(op(OpType::neg, {weight}));
  EXPECT_EQ(boundary_allocation_order(f, *boundary), kChannelsLast);
}

}  // namespace
}  // namespace nvfuse
