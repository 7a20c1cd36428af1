// The greedy merge of kernel exprs into groups (segment/merge_groups.h),
// with acceptance rules written here so each test states what a
// "scheduler" takes; the real schedulers' decisions are tested in Python
// (tests_py/test_merge_segments.py).
#include <gtest/gtest.h>

#include <algorithm>

#include "fusion_builders.h"
#include "ir/fusion.h"
#include "ops/broadcast.h"
#include "ops/pointwise.h"
#include "segment/merge_groups.h"

namespace nvfuse {
namespace {

std::vector<const Expr*> tensor_exprs(const Fusion& f) {
  std::vector<const Expr*> exprs;
  for (const Expr* e : f.exprs()) {
    exprs.push_back(e);
  }
  return exprs;
}

bool contains(const std::vector<const Expr*>& group, const Val* made) {
  return std::find(group.begin(), group.end(), made->definition()) != group.end();
}

TensorView* op(OpType type, std::vector<Val*> operands) {
  return pointwise(type, std::move(operands))->as<TensorView>();
}

TEST(MergeGroups, AChainEveryGroupTakesIsOneGroup) {
  Fusion f;
  TensorView* x = testing::symbolic_input(f, 1, DataType::Float);
  f.add_output(op(OpType::cos, {op(OpType::sin, {x})}));
  const auto groups =
      merge_into_kernel_groups(f, tensor_exprs(f), [](const auto&) { return true; });
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].exprs.size(), 2u);
  EXPECT_TRUE(groups[0].accepted);
}

TEST(MergeGroups, AConsumerDoesNotJoinAGroupThroughAnotherGroup) {
  // a -> b -> c and a -> c; a and b may not share a group. c joining a
  // would make {a, c} read b while b reads {a, c}: c must join b.
  Fusion f;
  TensorView* x = testing::symbolic_input(f, 1, DataType::Float);
  TensorView* a = op(OpType::sin, {x});
  TensorView* b = op(OpType::cos, {a});
  TensorView* c = op(OpType::add, {a, b});
  f.add_output(c);
  const auto groups = merge_into_kernel_groups(f, tensor_exprs(f),
      [&](const std::vector<const Expr*>& g) { return !(contains(g, a) && contains(g, b)); });
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].exprs, std::vector<const Expr*>{a->definition()});
  EXPECT_EQ(groups[1].exprs, (std::vector<const Expr*>{b->definition(), c->definition()}));
}

TEST(MergeGroups, IndependentPointwiseGroupsOfEqualExtentsShareAGroup) {
  // sin(x) and cos(y) read nothing of each other; the check keeps each
  // out of the other's group until both are formed. Of equal extents they
  // then share one (a model's batch counters, one launch); tanh(z), of
  // other extents, stays apart.
  Fusion f;
  TensorView* x = testing::concrete_input(f, {4, 8}, DataType::Float);
  TensorView* y = testing::concrete_input(f, {4, 8}, DataType::Float);
  TensorView* z = testing::concrete_input(f, {4, 9}, DataType::Float);
  TensorView* a = op(OpType::sin, {x});
  TensorView* b = op(OpType::cos, {y});
  TensorView* c = op(OpType::tanh, {z});
  f.add_output(a);
  f.add_output(b);
  f.add_output(c);
  const auto groups = merge_into_kernel_groups(f, tensor_exprs(f),
      [&](const std::vector<const Expr*>& g) { return !contains(g, c) || g.size() == 1; });
  ASSERT_EQ(groups.size(), 2u);
  const auto& shared = contains(groups[0].exprs, a) ? groups[0] : groups[1];
  EXPECT_TRUE(contains(shared.exprs, b));
  EXPECT_FALSE(contains(shared.exprs, c));
}

TEST(MergeGroups, ALaterGroupJoinsAProducerItFirstPassedOver) {
  // c = add(a, b) joins a's group (the first producer that takes it); b,
  // which started alone, joins that group in the second pass.
  Fusion f;
  TensorView* x = testing::symbolic_input(f, 1, DataType::Float);
  TensorView* y = testing::symbolic_input(f, 1, DataType::Float);
  TensorView* a = op(OpType::sin, {x});
  TensorView* b = op(OpType::cos, {y});
  f.add_output(op(OpType::add, {a, b}));
  const auto groups =
      merge_into_kernel_groups(f, tensor_exprs(f), [](const auto&) { return true; });
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].exprs.size(), 3u);
}

TEST(MergeGroups, SiblingsReadingOneProducerGroupShareAGroup) {
  // {a, b} is one group; exp(a) and tanh(b) may not join it, and read
  // different tensors of it: they join each other (batch norm's backward
  // second-stage sums, one kernel instead of two).
  Fusion f;
  TensorView* x = testing::symbolic_input(f, 1, DataType::Float);
  TensorView* a = op(OpType::sin, {x});
  TensorView* b = op(OpType::cos, {x});
  TensorView* s1 = op(OpType::exp, {a});
  TensorView* s2 = op(OpType::tanh, {b});
  f.add_output(s1);
  f.add_output(s2);
  const auto groups =
      merge_into_kernel_groups(f, tensor_exprs(f), [&](const std::vector<const Expr*>& g) {
        const bool producer = contains(g, a) || contains(g, b);
        const bool sibling = contains(g, s1) || contains(g, s2);
        return !(producer && sibling);
      });
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[1].exprs, (std::vector<const Expr*>{s1->definition(), s2->definition()}));
  EXPECT_TRUE(groups[1].accepted);
}

TEST(MergeGroups, RejectedExprsThatTouchAreOneGroupAndOthersRunAsKernels) {
  // tan is no kernel's; the two tans run together on the reference
  // evaluator, the sin after them as a kernel.
  Fusion f;
  TensorView* x = testing::symbolic_input(f, 1, DataType::Float);
  TensorView* t1 = op(OpType::tan, {x});
  TensorView* t2 = op(OpType::tan, {t1});
  TensorView* s = op(OpType::sin, {t2});
  f.add_output(s);
  const auto groups = merge_into_kernel_groups(f, tensor_exprs(f),
      [&](const std::vector<const Expr*>& g) { return !contains(g, t1) && !contains(g, t2); });
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].exprs, (std::vector<const Expr*>{t1->definition(), t2->definition()}));
  EXPECT_FALSE(groups[0].accepted);
  EXPECT_EQ(groups[1].exprs, std::vector<const Expr*>{s->definition()});
  EXPECT_TRUE(groups[1].accepted);
}

TEST(MergeGroups, ABroadcastGoesWithItsConsumer) {
  // Even when no kernel takes the consumer, the broadcast is not a group
  // of its own (it would be a copy).
  Fusion f;
  TensorView* row = testing::symbolic_input(f, 1, DataType::Float);
  TensorView* matrix = testing::symbolic_input(f, 2, DataType::Float);
  TensorView* wide = broadcast(row, {true, false});
  TensorView* sum = op(OpType::add, {wide, matrix});
  f.add_output(op(OpType::exp, {sum}));
  const auto groups = merge_into_kernel_groups(
      f, tensor_exprs(f), [&](const std::vector<const Expr*>& g) { return !contains(g, sum); });
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].exprs, (std::vector<const Expr*>{wide->definition(), sum->definition()}));
  EXPECT_FALSE(groups[0].accepted);
  EXPECT_TRUE(groups[1].accepted);
}

TEST(MergeGroups, ExprsThatShareAnInputShareAGroup) {
  // Two unrelated readers of x: one kernel loads it once.
  Fusion f;
  TensorView* x = testing::symbolic_input(f, 1, DataType::Float);
  f.add_output(op(OpType::sin, {x}));
  f.add_output(op(OpType::cos, {x}));
  const auto groups =
      merge_into_kernel_groups(f, tensor_exprs(f), [](const auto&) { return true; });
  ASSERT_EQ(groups.size(), 1u);
}

}  // namespace
}  // namespace nvfuse
