// The pre-segmentation passes that rewrite an op's uses: chains of the ops
// they rewrite (each rewrite destroys the exprs reading the old output,
// which may be the next op of the chain) come out fully rewritten.
#include <gtest/gtest.h>

#include "fusion_builders.h"
#include "ir/all_exprs.h"
#include "ir/fusion.h"
#include "ops/pointwise.h"
#include "ops/reduction.h"
#include "ops/shape.h"
#include "passes/relabel_size_one_reshapes.h"
#include "passes/squeeze_trivial_reductions.h"

namespace nvfuse {
namespace {

template <typename Kind>
int count_of(const Fusion& f) {
  int n = 0;
  for (const Expr* e : f.exprs()) {
    n += e->is<Kind>() ? 1 : 0;
  }
  return n;
}

TEST(SqueezeTrivialReductions, AChainOfSizeOneReductionsBecomesSqueezes) {
  Fusion f;
  TensorView* a = testing::concrete_input(f, {1, 1}, DataType::Float);
  TensorView* largest = reduce(OpType::maximum, a, {0}, false, DataType::Null);
  TensorView* total = reduce(OpType::add, largest, {0}, false, DataType::Null);
  f.add_output(pointwise(OpType::minimum, {total, total}));
  squeeze_trivial_reductions(f);
  EXPECT_EQ(count_of<ReductionOp>(f), 0) << f.to_string();
  EXPECT_EQ(count_of<SqueezeOp>(f), 2) << f.to_string();
  EXPECT_EQ(f.outputs().at(0)->as<TensorView>()->rank(), 0);
}

TEST(SqueezeTrivialReductions, AReductionOfARealAxisStays) {
  Fusion f;
  TensorView* a = testing::concrete_input(f, {4, 1}, DataType::Float);
  TensorView* rows = reduce(OpType::add, a, {1}, false, DataType::Null);
  f.add_output(reduce(OpType::add, rows, {0}, false, DataType::Null));
  squeeze_trivial_reductions(f);
  EXPECT_EQ(count_of<ReductionOp>(f), 1) << f.to_string();
  EXPECT_EQ(count_of<SqueezeOp>(f), 1) << f.to_string();
}

TEST(RelabelSizeOneReshapes, AChainOfSizeOneReshapesBecomesSqueezesAndBroadcasts) {
  Fusion f;
  TensorView* a = testing::concrete_input(f, {1, 6}, DataType::Float);
  TensorView* flat = reshape(a, {f.index_constant(6)});
  TensorView* column = reshape(flat, {f.index_constant(6), f.index_constant(1)});
  TensorView* back = reshape(column, {f.index_constant(6)});
  f.add_output(pointwise(OpType::neg, {back}));
  relabel_size_one_reshapes(f);
  EXPECT_EQ(count_of<ReshapeOp>(f), 0) << f.to_string();
  const auto* out = f.outputs().at(0)->as<TensorView>();
  ASSERT_EQ(out->rank(), 1);
  EXPECT_TRUE(out->logical()[0]->logical_extent()->is_constant_int(6));
}

}  // namespace
}  // namespace nvfuse
