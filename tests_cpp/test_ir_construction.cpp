// Building IR with the op constructors: dtypes, domains, implicit
// broadcasting and the extent equalities that ops record.
#include <gtest/gtest.h>

#include "fusion_builders.h"
#include "ir/fusion.h"
#include "ops/broadcast.h"
#include "ops/pointwise.h"
#include "ops/reduction.h"

namespace nvfuse {
namespace {

using testing::symbolic_input;

TEST(IrConstruction, BinaryOpSharesTheFirstOperandsExtents) {
  Fusion f;
  TensorView* a = symbolic_input(f, 2, DataType::Float);
  TensorView* b = symbolic_input(f, 2, DataType::Float);
  auto* out = pointwise(OpType::add, {a, b})->as<TensorView>();
  EXPECT_EQ(out->dtype(), DataType::Float);
  ASSERT_EQ(out->rank(), 2);
  EXPECT_EQ(out->logical()[0]->extent(), a->logical()[0]->extent());
  // Each axis pair must agree at run time.
  EXPECT_EQ(f.extent_equalities().size(), 2u);
}

TEST(IrConstruction, PromotionInsertsCastsOnTensorOperands) {
  Fusion f;
  TensorView* a = symbolic_input(f, 1, DataType::Int);
  Scalar* half = f.constant(ScalarValue(0.5), DataType::Double);
  Val* out = pointwise(OpType::mul, {a, half});
  EXPECT_EQ(out->dtype(), DataType::Float);
  const Expr* mul = out->definition();
  ASSERT_TRUE(mul->input(0)->definition() != nullptr);
  EXPECT_TRUE(mul->input(0)->definition()->is<CastOp>());
  EXPECT_EQ(mul->input(1), half);  // scalars are not cast
}

TEST(IrConstruction, LowerRankOperandGainsLeadingBroadcastAxes) {
  Fusion f;
  TensorView* matrix = symbolic_input(f, 2, DataType::Float);
  TensorView* row = symbolic_input(f, 1, DataType::Float);
  auto* out = pointwise(OpType::add, {matrix, row})->as<TensorView>();
  const Expr* add = out->definition();
  const auto* broadcasted = add->input(1)->as<TensorView>();
  ASSERT_EQ(broadcasted->rank(), 2);
  EXPECT_TRUE(broadcasted->logical()[0]->is_broadcast());
  EXPECT_FALSE(out->logical()[0]->is_broadcast());
}

TEST(IrConstruction, ComparisonsReturnBool) {
  Fusion f;
  TensorView* a = symbolic_input(f, 1, DataType::BFloat16);
  EXPECT_EQ(pointwise(OpType::lt, {a, a})->dtype(), DataType::Bool);
}

TEST(IrConstruction, OpRejectsAnUnsupportedDtype) {
  Fusion f;
  TensorView* a = symbolic_input(f, 1, DataType::Float);
  EXPECT_THROW(pointwise(OpType::bitwise_and, {a, a}), Error);
}

TEST(IrConstruction, ScalarOnlyOpsProduceScalars) {
  Fusion f;
  Scalar* s = f.create<Scalar>(DataType::Int, std::nullopt);
  f.add_input(s);
  Val* out = pointwise(OpType::mul, {s, f.constant(ScalarValue(2.5), DataType::Double)});
  EXPECT_TRUE(out->is<Scalar>());
  EXPECT_EQ(out->dtype(), DataType::Double);
}

TEST(IrConstruction, BroadcastInDimExpandsNewAxes) {
  Fusion f;
  TensorView* a = symbolic_input(f, 1, DataType::Float);
  TensorView* out = broadcast_in_dim(a, {f.index_constant(3), a->logical()[0]->extent()}, {1});
  ASSERT_EQ(out->rank(), 2);
  EXPECT_TRUE(out->logical()[0]->is_expanded());
  EXPECT_EQ(out->logical()[0]->expanded_extent()->constant_int(), 3);
  EXPECT_TRUE(out->definition()->is<ExpandOp>());
}

TEST(IrConstruction, ReductionDropsAxesUnlessKeepdim) {
  Fusion f;
  TensorView* a = symbolic_input(f, 3, DataType::Float);
  EXPECT_EQ(reduce(OpType::add, a, {1}, false, DataType::Null)->rank(), 2);
  TensorView* kept = reduce(OpType::add, a, {1}, true, DataType::Null);
  ASSERT_EQ(kept->rank(), 3);
  EXPECT_TRUE(kept->logical()[1]->is_broadcast());
}

TEST(IrConstruction, AxisZeroOfA0dTensorReducesNothing) {
  Fusion f;
  TensorView* scalar = symbolic_input(f, 0, DataType::Float);
  EXPECT_EQ(reduce(OpType::maximum, scalar, {0}, false, DataType::Null)->rank(), 0);
  EXPECT_EQ(reduce(OpType::add, scalar, {-1}, true, DataType::Null)->rank(), 0);
  EXPECT_ANY_THROW(reduce(OpType::add, scalar, {1}, false, DataType::Null));
}

TEST(IrConstruction, IntegerSumAccumulatesInInt) {
  Fusion f;
  TensorView* a = symbolic_input(f, 2, DataType::Int32);
  EXPECT_EQ(reduce(OpType::add, a, {0}, false, DataType::Null)->dtype(), DataType::Int);
  EXPECT_EQ(reduce(OpType::maximum, a, {0}, false, DataType::Null)->dtype(), DataType::Int32);
}

TEST(IrConstruction, VarMeanOfComplexHasRealVariance) {
  Fusion f;
  TensorView* a = symbolic_input(f, 2, DataType::ComplexFloat);
  auto [var, mean] = var_mean(a, {1}, 1, false);
  EXPECT_EQ(var->dtype(), DataType::Float);
  EXPECT_EQ(mean->dtype(), DataType::ComplexFloat);
}

TEST(IrConstruction, ExprsAreInTopologicalOrderAndExcludeDeadCode) {
  Fusion f;
  TensorView* a = symbolic_input(f, 1, DataType::Float);
  Val* dead = pointwise(OpType::exp, {a});
  Val* live = pointwise(OpType::neg, {pointwise(OpType::sin, {a})});
  f.add_output(live);
  auto exprs = f.exprs();
  ASSERT_EQ(exprs.size(), 2u);
  EXPECT_EQ(exprs[0]->as<PointwiseOp>()->op(), OpType::sin);
  EXPECT_EQ(exprs[1]->as<PointwiseOp>()->op(), OpType::neg);
  EXPECT_TRUE(dead->definition() != nullptr);
}

TEST(IrConstruction, ReplacingAValReadTwiceByOneExprRewritesThatExprOnce) {
  Fusion f;
  TensorView* a = symbolic_input(f, 1, DataType::Float);
  TensorView* b = symbolic_input(f, 1, DataType::Float);
  Val* square = pointwise(OpType::mul, {a, a});
  f.add_output(square);
  ASSERT_EQ(a->uses().size(), 2u);  // once per operand
  EXPECT_EQ(a->distinct_uses().size(), 1u);
  f.replace_all_uses(a, b);
  const Expr* mul = square->definition();
  EXPECT_EQ(mul->input(0), b);
  EXPECT_EQ(mul->input(1), b);
  EXPECT_TRUE(a->uses().empty());
}

}  // namespace
}  // namespace nvfuse
