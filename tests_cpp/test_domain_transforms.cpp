// Split, merge and reorder of loop domains; stride order -> allocation.
#include <gtest/gtest.h>

#include "ir/axes.h"
#include "ir/expression_evaluator.h"
#include "ir/fusion.h"

namespace nvfuse {
namespace {

TensorView* make_tensor(Fusion& f, std::vector<Scalar*> extents) {
  std::vector<IterDomain*> axes;
  for (Scalar* e : extents) {
    axes.push_back(f.create<IterDomain>(e, IterType::kIteration));
  }
  return f.create<TensorView>(TensorDomain(axes), DataType::Float);
}

TEST(DomainTransforms, InnerSplitOfAConstantFoldsExtents) {
  Fusion f;
  TensorView* tv = make_tensor(f, {f.index_constant(32)});
  tv->split(0, 4);
  ASSERT_EQ(tv->loop_rank(), 2);
  EXPECT_EQ(tv->axis(0)->extent()->constant_int(), 8);
  EXPECT_EQ(tv->axis(1)->extent()->constant_int(), 4);
  EXPECT_TRUE(tv->axis(0)->definition()->is<Split>());
  EXPECT_EQ(tv->rank(), 1);  // logical is untouched
}

TEST(DomainTransforms, OuterSplitMakesTheOuterAxisTheFactor) {
  Fusion f;
  auto* n = f.create<Scalar>(DataType::Index, std::nullopt);
  TensorView* tv = make_tensor(f, {n});
  tv->outer_split(0, 4);  // e.g. 4 devices
  EXPECT_EQ(tv->axis(0)->extent()->constant_int(), 4);
  ExpressionEvaluator ee;
  ee.bind(n, ScalarValue(int64_t{10}));
  EXPECT_EQ(ee.evaluate(tv->axis(1)->extent())->as_int(), 3);  // ceil(10/4)
}

TEST(DomainTransforms, MergeMultipliesExtents) {
  Fusion f;
  TensorView* tv = make_tensor(f, {f.index_constant(3), f.index_constant(5)});
  tv->merge(0, 1);
  ASSERT_EQ(tv->loop_rank(), 1);
  EXPECT_EQ(tv->axis(0)->extent()->constant_int(), 15);
  EXPECT_TRUE(tv->axis(0)->definition()->is<Merge>());
}

TEST(DomainTransforms, ReorderPermutesTheLoopDomain) {
  Fusion f;
  TensorView* tv = make_tensor(f, {f.index_constant(2), f.index_constant(3), f.index_constant(4)});
  IterDomain* last = tv->axis(2);
  tv->reorder({2, 0, 1});
  EXPECT_EQ(tv->axis(0), last);
  EXPECT_THROW(tv->reorder({0, 0, 1}), Error);
}

TEST(DomainTransforms, ParallelizeMarksDeviceAxes) {
  Fusion f;
  TensorView* tv = make_tensor(f, {f.index_constant(8)});
  tv->outer_split(0, 2);
  tv->axis(0)->parallelize(ParallelType::DIDx);
  EXPECT_TRUE(tv->axis(0)->is_device_parallel());
  EXPECT_EQ(tv->axis(0)->to_string().substr(0, 5), "iDIDx");
}

TEST(DomainTransforms, SplitOfABadAxisIsADefinitionError) {
  Fusion f;
  TensorView* tv = make_tensor(f, {f.index_constant(8)});
  try {
    tv->split(3, 2);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kDefinition);
    EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos);
  }
}

TEST(StrideOrder, TranslatesToAnAllocationPermutation) {
  // stride_order[i] = stride rank of axis i; 0 is the fastest.
  EXPECT_EQ(allocation_order_from_stride_order({2, 1, 0}), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(allocation_order_from_stride_order({0, 1}), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(allocation_order_from_stride_order({1, 0, 2}), (std::vector<int64_t>{2, 0, 1}));
  EXPECT_EQ(stride_order_from_allocation_order({2, 0, 1}), (std::vector<int64_t>{1, 0, 2}));
}

TEST(StrideOrder, AllocationPermutationOfATensorView) {
  Fusion f;
  TensorView* tv = make_tensor(f, {f.index_constant(2), f.index_constant(3)});
  tv->set_allocation_domain({tv->logical()[1], tv->logical()[0]}, {true, true});
  EXPECT_TRUE(tv->domain().has_allocation());
  EXPECT_EQ(*tv->domain().allocation_permutation(), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(tv->stride_order(), (std::vector<int64_t>{0, 1}));
}

TEST(Axes, NormalizeAxesSortsAndRejectsDuplicates) {
  EXPECT_EQ(normalize_axes({-1, 0}, 3, "op"), (std::vector<int64_t>{0, 2}));
  EXPECT_THROW(normalize_axes({1, -2}, 3, "op"), Error);
}

}  // namespace
}  // namespace nvfuse
