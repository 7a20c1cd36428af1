// Stream annotations (multidevice/stream_chunks.h): which logical axis a
// ParallelType::Stream loop axis cuts and into how many chunks, and the
// loop domains left once they are taken.
#include <gtest/gtest.h>

#include "fusion_builders.h"
#include "ir/all_exprs.h"
#include "ir/errors.h"
#include "ir/sharding.h"
#include "multidevice/stream_chunks.h"
#include "ops/pointwise.h"

namespace nvfuse {
namespace {

using testing::mesh_of;
using testing::symbolic_input;

TEST(StreamChunks, OuterSplitOfALogicalAxis) {
  Fusion f;
  TensorView* x = symbolic_input(f, 2, DataType::Float);
  x->outer_split(0, 4);
  x->axis(0)->parallelize(ParallelType::Stream);
  const auto chunks = stream_chunks_of(*x);
  ASSERT_TRUE(chunks.has_value());
  EXPECT_EQ(chunks->axis, 0);
  EXPECT_EQ(chunks->count, 4);
  EXPECT_FALSE(chunks->is_logical_axis());
}

TEST(StreamChunks, OuterSplitOfTheLocalPartOfADeviceSplit) {
  // [D, S, M/(D*S), N]: the device's rows in S chunks.
  Fusion f;
  TensorView* y = symbolic_input(f, 2, DataType::Float);
  y->set_device_mesh(mesh_of(2));
  y->outer_split(0, 2);
  y->axis(0)->parallelize(ParallelType::DIDx);
  y->outer_split(1, 3);
  y->axis(1)->parallelize(ParallelType::Stream);
  const auto chunks = stream_chunks_of(*y);
  ASSERT_TRUE(chunks.has_value());
  EXPECT_EQ(chunks->axis, 0);
  EXPECT_EQ(chunks->count, 3);
}

TEST(StreamChunks, ALogicalAxisIsOneChunkPerIndex) {
  Fusion f;
  TensorView* a = symbolic_input(f, 4, DataType::Float);
  a->axis(0)->parallelize(ParallelType::Stream);
  const auto chunks = stream_chunks_of(*a);
  ASSERT_TRUE(chunks.has_value());
  EXPECT_EQ(chunks->axis, 0);
  EXPECT_TRUE(chunks->is_logical_axis());
}

TEST(StreamChunks, AnInnerSplitOrTwoStreamAxesAreDefinitionErrors) {
  Fusion f;
  TensorView* inner = symbolic_input(f, 2, DataType::Float);
  inner->split(0, 4, /*inner_split=*/true);
  inner->axis(0)->parallelize(ParallelType::Stream);
  EXPECT_THROW(stream_chunks_of(*inner), Error);
  TensorView* two = symbolic_input(f, 2, DataType::Float);
  two->axis(0)->parallelize(ParallelType::Stream);
  two->axis(1)->parallelize(ParallelType::Stream);
  EXPECT_THROW(stream_chunks_of(*two), Error);
}

TEST(StreamChunks, TakingThemLeavesTheDeviceSplitsOnly) {
  Fusion f;
  TensorView* x = symbolic_input(f, 2, DataType::Float);
  f.add_output(pointwise(OpType::neg, {x}));
  x->set_device_mesh(mesh_of(4));
  x->outer_split(0, 4);
  x->axis(0)->parallelize(ParallelType::DIDx);
  x->outer_split(1, 2);
  x->axis(1)->parallelize(ParallelType::Stream);
  const Sharding before = sharding_of(*x);
  const auto annotations = take_stream_annotations(f);
  ASSERT_EQ(annotations.size(), 1u);
  EXPECT_EQ(annotations.at(x).count, 2);
  EXPECT_EQ(x->loop_rank(), 3);  // [DIDx{4}, M/4, N]
  EXPECT_FALSE(stream_chunks_of(*x).has_value());
  EXPECT_EQ(sharding_of(*x), before);
}

}  // namespace
}  // namespace nvfuse
