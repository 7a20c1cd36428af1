// schedule/value_signs: the patterns whose sign is known (softmax's shifted
// values and log-softmax's log-sum), softmax's sum (at least one), and near
// misses that are not.
#include <gtest/gtest.h>

#include "fusion_builders.h"
#include "ir/fusion.h"
#include "ops/broadcast.h"
#include "ops/pointwise.h"
#include "ops/reduction.h"
#include "schedule/value_signs.h"

namespace nvfuse {
namespace {

TensorView* tv(Val* v) { return v->as<TensorView>(); }

// broadcast(op(y, axis 1)) back to [N, M].
TensorView* row_broadcast(OpType op, TensorView* y) {
  return broadcast(reduce(op, y, {1}, false, DataType::Null), {false, true});
}

TEST(ValueSigns, SoftmaxShiftIsNeverPositive) {
  Fusion f;
  TensorView* y = testing::symbolic_input(f, 2, DataType::Float);
  Val* shifted = pointwise(OpType::sub, {y, row_broadcast(OpType::maximum, y)});
  EXPECT_TRUE(is_never_positive(shifted));
  EXPECT_FALSE(is_never_negative(shifted));
}

TEST(ValueSigns, LogSoftmaxIsNeverPositive) {
  Fusion f;
  TensorView* y = testing::symbolic_input(f, 2, DataType::Float);
  Val* shifted = pointwise(OpType::sub, {y, row_broadcast(OpType::maximum, y)});
  TensorView* log_sum = tv(pointwise(OpType::log,
      {reduce(OpType::add, tv(pointwise(OpType::exp, {shifted})), {1}, false, DataType::Null)}));
  EXPECT_TRUE(is_never_negative(log_sum));
  EXPECT_TRUE(
      is_never_positive(pointwise(OpType::sub, {shifted, broadcast(log_sum, {false, true})})));
}

TEST(ValueSigns, SoftmaxSumIsAtLeastOne) {
  Fusion f;
  TensorView* y = testing::symbolic_input(f, 2, DataType::Float);
  Val* e = pointwise(OpType::exp, {pointwise(OpType::sub, {y, row_broadcast(OpType::maximum, y)})});
  TensorView* sum = reduce(OpType::add, tv(e), {1}, false, DataType::Null);
  EXPECT_TRUE(is_at_least_one(sum));
  EXPECT_TRUE(is_at_least_one(broadcast(sum, {false, true})));
  // Over the other axis the sum need not hold exp(0); a sum of y may be 0.
  EXPECT_FALSE(is_at_least_one(reduce(OpType::add, tv(e), {0}, false, DataType::Null)));
  EXPECT_FALSE(is_at_least_one(reduce(OpType::add, y, {1}, false, DataType::Null)));
  EXPECT_FALSE(is_at_least_one(e));
}

TEST(ValueSigns, NearMissesAreNotKnown) {
  Fusion f;
  TensorView* y = testing::symbolic_input(f, 2, DataType::Float);
  TensorView* z = testing::symbolic_input(f, 2, DataType::Float);
  // Another tensor's max, a min, the max moved to the other axis.
  EXPECT_FALSE(is_never_positive(pointwise(OpType::sub, {z, row_broadcast(OpType::maximum, y)})));
  EXPECT_FALSE(is_never_positive(pointwise(OpType::sub, {y, row_broadcast(OpType::minimum, y)})));
  TensorView* crossed =
      broadcast(reduce(OpType::maximum, y, {1}, false, DataType::Null), {true, false});
  EXPECT_FALSE(is_never_positive(pointwise(OpType::sub, {y, crossed})));
  // A log-sum over the axis the max kept need not hold exp(0).
  Val* shifted = pointwise(OpType::sub, {y, row_broadcast(OpType::maximum, y)});
  Val* column_log_sum = pointwise(OpType::log,
      {reduce(OpType::add, tv(pointwise(OpType::exp, {shifted})), {0}, false, DataType::Null)});
  EXPECT_FALSE(is_never_negative(column_log_sum));
  EXPECT_FALSE(is_never_positive(pointwise(OpType::sub, {shifted, shifted})));
}

}  // namespace
}  // namespace nvfuse
