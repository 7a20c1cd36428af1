// The segmenter's plan for a fusion (segment/fusion_plan.h,
// segment/kernel_segments.h): which kernel segments run it, which segments
// stand by for inputs the one kernel declines, and when it is cut into
// parts instead. The runtime only turns the plan into executors.
#include <gtest/gtest.h>

#include "fusion_builders.h"
#include "ir/fusion.h"
#include "ops/matmul.h"
#include "ops/pointwise.h"
#include "ops/reduction.h"
#include "segment/fusion_plan.h"

namespace nvfuse {
namespace {

using testing::concrete_input;

TEST(FusionPlan, OneKernelIsOneSegmentWithoutFallback) {
  Fusion f;
  TensorView* a = concrete_input(f, {4, 8}, DataType::Float);
  f.add_output(pointwise(OpType::exp, {a}));
  FusionPlan plan = plan_fusion(f);
  EXPECT_TRUE(plan.parts.empty());
  ASSERT_EQ(plan.kernels.segments.size(), 1u);
  const KernelSegment& whole = plan.kernels.segments[0];
  EXPECT_EQ(whole.owned, nullptr);  // the fusion itself
  ASSERT_TRUE(whole.choice.has_value());
  EXPECT_EQ(whole.choice->kind, KernelKind::kPointwise);
  EXPECT_EQ(whole.outputs, (std::vector<size_t>{0}));
  EXPECT_TRUE(plan.kernels.fallback.empty());
}

TEST(FusionPlan, AnInnerOuterReductionKeepsItsSplitAsTheFallback) {
  // Row and column sums of one input: one inner-outer kernel, and one
  // kernel per reduction class for rows that kernel cannot hold.
  Fusion f;
  testing::add_row_and_column_sums_of_squares(f);
  KernelSegmentPlan plan = plan_kernel_segments(f);
  ASSERT_EQ(plan.segments.size(), 1u);
  ASSERT_EQ(plan.fallback.size(), 2u);
  for (const KernelSegment& s : plan.fallback) {
    ASSERT_NE(s.owned, nullptr);
    EXPECT_EQ(s.owned->outputs().size(), 1u);
    EXPECT_TRUE(s.choice.has_value());
  }
  EXPECT_NE(plan.fallback[0].outputs, plan.fallback[1].outputs);
}

TEST(FusionPlan, ASumOfASumIsCutIntoKernelParts) {
  // No kernel takes it whole and the reduction classes do not split it:
  // the plan cuts it into one-kernel parts that pass the row sums.
  Fusion f;
  TensorView* a = concrete_input(f, {4, 8}, DataType::Float);
  TensorView* rows = reduce(OpType::add, a, {1}, false, DataType::Null);
  f.add_output(reduce(OpType::add, rows, {0}, false, DataType::Null));
  FusionPlan plan = plan_fusion(f);
  ASSERT_EQ(plan.parts.size(), 2u);
  EXPECT_TRUE(plan.kernels.segments.empty());
  EXPECT_EQ(plan.parts[1].boundary.size(), 1u);
}

TEST(FusionPlan, AMatmulCutsTheFusionIntoParts) {
  Fusion f;
  TensorView* a = concrete_input(f, {4, 8}, DataType::Float);
  TensorView* b = concrete_input(f, {8, 8}, DataType::Float);
  TensorView* h = pointwise(OpType::relu, {a})->as<TensorView>();
  f.add_output(pointwise(OpType::exp, {matmul(h, b)}));
  FusionPlan plan = plan_fusion(f);
  ASSERT_EQ(plan.parts.size(), 3u);
  EXPECT_FALSE(plan.parts[0].is_aten);
  EXPECT_TRUE(plan.parts[1].is_aten);
  EXPECT_FALSE(plan.parts[2].is_aten);
}

}  // namespace
}  // namespace nvfuse
