// The recording frontend: records as plain data, their structural hash, the
// fusion cache, the printed repro script and define_tensor's translation of
// shape/contiguity/stride_order into a TensorDomain.
#include <gtest/gtest.h>

#include "frontend/fusion_cache.h"
#include "frontend/recording_state.h"
#include "frontend/tensor_descriptor.h"

namespace nvfuse {
namespace {

RecordingState relu_of_product(double scale, DataType dtype = DataType::Float) {
  RecordingState s;
  StateRef t = s.define_tensor({-1, -1}, true, dtype, false, {});
  StateRef c = s.define_scalar(ScalarValue(scale), DataType::Null);
  StateRef prod = s.pointwise(OpType::mul, {t, c});
  s.add_output(s.pointwise(OpType::relu, {prod}), std::nullopt, {});
  return s;
}

TEST(Recording, IdenticalDefinitionsHaveEqualRecordsAndHashes) {
  RecordingState a = relu_of_product(2.0);
  RecordingState b = relu_of_product(2.0);
  EXPECT_TRUE(a.same_records(b));
  EXPECT_EQ(a.hash(), b.hash());
}

TEST(Recording, ADifferentConstantOrDtypeChangesTheRecords) {
  EXPECT_FALSE(relu_of_product(2.0).same_records(relu_of_product(3.0)));
  EXPECT_FALSE(relu_of_product(2.0).same_records(relu_of_product(2.0, DataType::Half)));
}

TEST(Recording, PrintsAsPythonCalls) {
  RecordingState s = relu_of_product(0.5);
  const std::string text = python_definition(s.records(), "f");
  EXPECT_NE(text.find("T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], "
                      "dtype=DataType.Float, is_cpu=False)"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("S1 = fd.define_scalar(0.5, dtype=DataType.Double)"), std::string::npos);
  EXPECT_NE(text.find("T2 = fd.ops.mul(T0, S1)"), std::string::npos);
  EXPECT_NE(text.find("fd.add_output(T3)"), std::string::npos);
}

TEST(Recording, IdentityStrideOrderIsDroppedSoDefinitionsMatch) {
  RecordingState a;
  a.define_tensor({-1, -1}, true, DataType::Float, false, {1, 0});
  RecordingState b;
  b.define_tensor({-1, -1}, true, DataType::Float, false, {});
  EXPECT_TRUE(a.same_records(b));
}

TEST(Recording, StrideOrderBecomesAPermutedAllocationDomain) {
  RecordingState s;
  s.define_tensor({-1, 1, -1}, true, DataType::Float, false, {0, 2, 1});
  const auto* tv = s.fusion().inputs().at(0)->as<TensorView>();
  // stride_order [0, 2, 1]: axis 1 outermost, then axis 2, then axis 0.
  EXPECT_EQ(*tv->domain().allocation_permutation(), (std::vector<int64_t>{1, 2, 0}));
  // One bool expands to None on the broadcast axis, in allocation order.
  EXPECT_EQ(
      tv->domain().contiguity(), (std::vector<std::optional<bool>>{std::nullopt, true, true}));
}

TEST(Recording, NoneContiguityOnASymbolicAxisIsAnExpandedBroadcast) {
  RecordingState s;
  s.define_tensor(
      {-1, -1}, std::vector<std::optional<bool>>{std::nullopt, true}, DataType::Float, false, {});
  const auto* tv = s.fusion().inputs().at(0)->as<TensorView>();
  EXPECT_TRUE(tv->logical()[0]->is_expanded());
}

TEST(Recording, AFailedCallLeavesTheStateUnchanged) {
  RecordingState s;
  StateRef t = s.define_tensor({-1}, true, DataType::Float, false, {});
  EXPECT_THROW(s.reduction(OpType::add, t, {4}, false, DataType::Null), Error);
  EXPECT_EQ(s.records().size(), 1u);
  StateRef ok = s.reduction(OpType::add, t, {0}, false, DataType::Null);
  EXPECT_EQ(ok.index, 1);
}

TEST(Recording, ErrorsNameTheCall) {
  RecordingState s;
  StateRef t = s.define_tensor({-1}, true, DataType::Float, false, {});
  try {
    s.broadcast(t, {true, true});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kDefinition);
    EXPECT_EQ(std::string(e.what()).rfind("In fd.ops.broadcast(T0, ", 0), 0u) << e.what();
  }
}

TEST(FusionCache, ReusesTheEntryOfAnIdenticalDefinition) {
  FusionCache& cache = FusionCache::get();
  const int64_t first = cache.insert_or_find(relu_of_product(7.0));
  const int64_t count = cache.num_fusions();
  EXPECT_EQ(cache.insert_or_find(relu_of_product(7.0)), first);
  EXPECT_EQ(cache.num_fusions(), count);
  EXPECT_NE(cache.insert_or_find(relu_of_product(8.0)), first);
  EXPECT_NE(
      cache.at(first).repro_script().find("with FusionDefinition() as fd:"), std::string::npos);
}

TEST(TensorDescriptor, RowMajorTensorHasNoStrideOrder) {
  TensorDescriptor d = describe_tensor({4, 1, 8}, {8, 8, 1});
  EXPECT_EQ(d.shape, (std::vector<int64_t>{-1, 1, -1}));
  EXPECT_EQ(d.contiguity, (std::vector<std::optional<bool>>{true, std::nullopt, true}));
  EXPECT_TRUE(d.stride_order.empty());
}

TEST(TensorDescriptor, TransposedTensorGetsAStrideOrder) {
  TensorDescriptor d = describe_tensor({4, 6}, {1, 4});
  EXPECT_EQ(d.stride_order, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(d.contiguity, (std::vector<std::optional<bool>>{true, true}));
}

TEST(TensorDescriptor, StrideZeroAxisIsAnExpandedBroadcast) {
  TensorDescriptor d = describe_tensor({3, 5}, {0, 1});
  EXPECT_EQ(d.shape, (std::vector<int64_t>{-1, -1}));
  EXPECT_EQ(d.contiguity, (std::vector<std::optional<bool>>{std::nullopt, true}));
  EXPECT_TRUE(d.stride_order.empty());
}

TEST(TensorDescriptor, SlicedTensorIsNotContiguousInItsStridedAxis) {
  // Every other column: the inner axis has stride 2; the outer axis still
  // packs the inner one (8 = 2 * 4), so it counts as contiguous.
  TensorDescriptor d = describe_tensor({6, 4}, {8, 2});
  EXPECT_EQ(d.contiguity, (std::vector<std::optional<bool>>{true, false}));
}

}  // namespace
}  // namespace nvfuse
