// Fusion-wide tools: the printer, cloning, the expression evaluator, the
// pre-segmentation passes, and device meshes.
#include <gtest/gtest.h>

#include "fusion_builders.h"
#include "ir/device_mesh.h"
#include "ir/expression_evaluator.h"
#include "ir/fusion.h"
#include "ir/printer.h"
#include "ops/pointwise.h"
#include "passes/remove_redundant_casts.h"

namespace nvfuse {
namespace {

TensorView* input_1d(Fusion& f, DataType dtype) { return testing::symbolic_input(f, 1, dtype); }

TEST(Printer, OneLinePerExprWithDomainsAndDtypes) {
  Fusion f;
  TensorView* a = input_1d(f, DataType::Float);
  f.add_output(pointwise(OpType::sin, {a}));
  const std::string text = f.to_string();
  EXPECT_NE(text.find("Inputs:\n  T0_Float[iS0{i0}]"), std::string::npos) << text;
  EXPECT_NE(text.find("T1_Float[iS1{i0}] = sin(T0)"), std::string::npos) << text;
  EXPECT_NE(text.find("Outputs:\n  T1"), std::string::npos) << text;
}

TEST(Clone, CopiesStructureInputsOutputsAndPrintsTheSame) {
  Fusion f;
  TensorView* a = input_1d(f, DataType::Half);
  f.add_output(pointwise(OpType::add, {a, input_1d(f, DataType::Half)}));
  CloneMap map;
  std::unique_ptr<Fusion> copy = f.clone(&map);
  EXPECT_EQ(copy->to_string(), f.to_string());
  EXPECT_EQ(copy->inputs().at(0), map.at(a));
  EXPECT_EQ(copy->extent_equalities().size(), f.extent_equalities().size());
  EXPECT_NE(copy->inputs().at(0), a);
}

TEST(ExpressionEvaluator, EvaluatesExtentArithmetic) {
  Fusion f;
  auto* n = f.create<Scalar>(DataType::Index, std::nullopt);
  Val* doubled = pointwise(OpType::mul, {n, f.index_constant(2)});
  Val* halved = pointwise(OpType::ceil_div, {doubled, f.index_constant(3)});
  ExpressionEvaluator ee;
  EXPECT_FALSE(ee.evaluate(halved->as<Scalar>()).has_value());
  ee.bind(n, ScalarValue(int64_t{5}));
  EXPECT_EQ(ee.evaluate(halved->as<Scalar>())->as_int(), 4);
}

TEST(RemoveRedundantCasts, DropsAnExactIntermediateCast) {
  Fusion f;
  TensorView* a = input_1d(f, DataType::BFloat16);
  Val* widened = cast(a, DataType::Float);
  Val* back = cast(widened, DataType::Half);
  f.add_output(back);
  remove_redundant_casts(f);
  ASSERT_EQ(f.exprs().size(), 1u);
  EXPECT_EQ(back->definition()->input(0), a);
}

TEST(RemoveRedundantCasts, KeepsARoundingIntermediateCast) {
  Fusion f;
  TensorView* a = input_1d(f, DataType::Float);
  Val* narrowed = cast(a, DataType::BFloat16);
  f.add_output(cast(narrowed, DataType::Float));
  remove_redundant_casts(f);
  EXPECT_EQ(f.exprs().size(), 2u);
}

TEST(DeviceMesh, RejectsDuplicatesAndWrongShapes) {
  EXPECT_THROW(DeviceMesh({0, 1, 1}), Error);
  EXPECT_THROW(DeviceMesh({2, 2}, {0, 1, 2}), Error);
}

TEST(DeviceMesh, SliceThroughAnAxisGivesTheTeamsOfA2DMesh) {
  DeviceMesh mesh({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  EXPECT_EQ(mesh.slice_through(2, 1), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(mesh.slice_through(6, 1), (std::vector<int64_t>{4, 5, 6, 7}));
  EXPECT_EQ(mesh.slice_through(5, 0), (std::vector<int64_t>{1, 5}));
  EXPECT_EQ(*mesh.coordinates_of(6), (std::vector<int64_t>{1, 2}));
  EXPECT_FALSE(mesh.coordinates_of(9).has_value());
}

}  // namespace
}  // namespace nvfuse
