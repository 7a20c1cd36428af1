// Which per-row outputs of a reduction kernel may update their input in
// place (schedule/reduction_analysis.h, may_update_in_place), and which
// lower-rank outputs the reduction analysis maps: batch norm's running
// statistics, squeezed to [C], written straight into their buffers.
#include <gtest/gtest.h>

#include "fusion_builders.h"
#include "ir/fusion.h"
#include "ops/broadcast.h"
#include "ops/pointwise.h"
#include "ops/reduction.h"
#include "ops/shape.h"
#include "schedule/reduction_analysis.h"

namespace nvfuse {
namespace {

using testing::concrete_input;

TensorView* op(OpType type, std::vector<Val*> operands) {
  return pointwise(type, std::move(operands))->as<TensorView>();
}

Val* number(Fusion& f, double value) { return f.constant(ScalarValue(value), DataType::Double); }

// Row sums of a [4, 8] input folded into a [4] running value that the
// fusion updates in place; `running_also_per_element` adds the running
// value to every element before the sum too.
struct RunningSums {
  Fusion f;
  TensorView* updated = nullptr;
  explicit RunningSums(bool running_also_per_element) {
    TensorView* x = concrete_input(f, {4, 8}, DataType::Float);
    TensorView* running = concrete_input(f, {4}, DataType::Float);
    TensorView* summed = x;
    if (running_also_per_element) {
      summed = op(OpType::add, {x, broadcast(running, {false, true})});
    }
    TensorView* sums = reduce(OpType::add, summed, {1}, false, DataType::Null);
    updated = op(OpType::add,
        {op(OpType::mul, {sums, number(f, 0.1)}), op(OpType::mul, {running, number(f, 0.9)})});
    f.add_output(sums);
    f.add_output(updated);
    f.alias_output_to_input(updated, running);
  }
};

TEST(ReductionInPlace, APerRowUpdateOfPerRowMathIsWrittenInPlace) {
  RunningSums sums(/*running_also_per_element=*/false);
  std::string why_not;
  auto analysis = analyze_reduction(sums.f, &why_not);
  ASSERT_TRUE(analysis.has_value()) << why_not;
  EXPECT_TRUE(may_update_in_place(*analysis, sums.f, *sums.updated));
}

TEST(ReductionInPlace, AnInputReadPerElementTooIsNotUpdatedInPlace) {
  // Threads of the row read the running value for their elements while
  // the row's finishing thread would already have written it.
  RunningSums sums(/*running_also_per_element=*/true);
  std::string why_not;
  auto analysis = analyze_reduction(sums.f, &why_not);
  ASSERT_TRUE(analysis.has_value()) << why_not;
  EXPECT_FALSE(may_update_in_place(*analysis, sums.f, *sums.updated));
}

TEST(ReductionInPlace, AnOutputThatDropsTheReferencesBroadcastAxesIsMapped) {
  // [4, 8, 1] reduced over axis 0, the [8, 1] result squeezed to [8].
  Fusion f;
  TensorView* x = concrete_input(f, {4, 8}, DataType::Float);
  TensorView* wide = broadcast(x, {false, false, true});
  TensorView* sums = reduce(OpType::add, wide, {0}, false, DataType::Null);
  f.add_output(op(OpType::mul, {squeeze(sums, {1}), number(f, 0.5)}));
  std::string why_not;
  auto analysis = analyze_reduction(f, &why_not);
  ASSERT_TRUE(analysis.has_value()) << why_not;
  EXPECT_EQ(analysis->axis_map.at(f.outputs()[0]->as<TensorView>()), std::vector<int>{1});
}

}  // namespace
}  // namespace nvfuse
