// Which generated kernel takes a fusion whole (segment/kernel_choice.h),
// decided from the schedulers' analyses alone.
#include <gtest/gtest.h>

#include "fusion_builders.h"
#include "ir/fusion.h"
#include "ops/pointwise.h"
#include "ops/reduction.h"
#include "ops/shape.h"
#include "segment/kernel_choice.h"
#include "segment/kernel_segments.h"

namespace nvfuse {
namespace {

using testing::concrete_input;

std::optional<KernelKind> kind_of(const Fusion& f, std::string* why_not = nullptr) {
  std::string kind;
  std::string reason;
  auto choice = choose_kernel(f, &kind, &reason);
  if (why_not != nullptr) {
    *why_not = reason;
  }
  return choice.has_value() ? std::optional<KernelKind>(choice->kind) : std::nullopt;
}

TEST(KernelChoice, ElementwiseMathIsThePointwiseKernels) {
  Fusion f;
  TensorView* a = concrete_input(f, {4, 8}, DataType::Float);
  f.add_output(pointwise(OpType::exp, {pointwise(OpType::neg, {a})}));
  EXPECT_EQ(kind_of(f), KernelKind::kPointwise);
  EXPECT_TRUE(is_one_kernel(f));
}

TEST(KernelChoice, AReductionIsTheReductionKernels) {
  Fusion f;
  TensorView* a = concrete_input(f, {4, 8}, DataType::Float);
  f.add_output(reduce(OpType::add, a, {1}, false, DataType::Null));
  EXPECT_EQ(kind_of(f), KernelKind::kReduction);
}

TEST(KernelChoice, ASliceIsTheCoordinateKernels) {
  Fusion f;
  TensorView* a = concrete_input(f, {4, 8}, DataType::Float);
  TensorView* part = slice(a, {f.index_constant(0), f.index_constant(2)},
      {f.index_constant(4), f.index_constant(8)}, {f.index_constant(1), f.index_constant(1)});
  f.add_output(pointwise(OpType::neg, {part}));
  EXPECT_EQ(kind_of(f), KernelKind::kCoordinate);
}

TEST(KernelChoice, ALoneReshapeStaysAnAtenCallWithTheReason) {
  Fusion f;
  TensorView* a = concrete_input(f, {4, 8}, DataType::Float);
  f.add_output(reshape(a, {f.index_constant(32)}));
  std::string why_not;
  EXPECT_EQ(kind_of(f, &why_not), std::nullopt);
  EXPECT_NE(why_not.find("a reshape alone runs as an ATen reshape"), std::string::npos) << why_not;
  EXPECT_FALSE(runs_as_kernels(f));
}

TEST(KernelChoice, RowAndColumnSumsOfOneInputAreOneReductionKernel) {
  // A sum over rows and a sum over columns of the same input: one
  // inner-outer kernel walks both.
  Fusion f;
  testing::add_row_and_column_sums_of_squares(f);
  EXPECT_EQ(kind_of(f), KernelKind::kReduction);
  EXPECT_TRUE(runs_as_kernels(f));
}

TEST(KernelChoice, ASumOfASumRunsAsNoSingleKernel) {
  // The column sum reads the row sums: no kernel takes it whole, and the
  // reduction classes do not split it either (the segmenter then cuts it
  // into kernels that pass the row sums through memory).
  Fusion f;
  TensorView* a = concrete_input(f, {4, 8}, DataType::Float);
  TensorView* rows = reduce(OpType::add, a, {1}, false, DataType::Null);
  f.add_output(reduce(OpType::add, rows, {0}, false, DataType::Null));
  EXPECT_FALSE(is_one_kernel(f));
  EXPECT_FALSE(runs_as_kernels(f));
}

}  // namespace
}  // namespace nvfuse
