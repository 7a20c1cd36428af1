// Sharding through reshape, slice and attention (seed 003's MHA and the
// attention block): the axis flows, propagation, the communications they
// need, and localized reshape sizes (no processes needed).
#include <gtest/gtest.h>

#include "fusion_builders.h"
#include "ir/all_exprs.h"
#include "ir/axis_flow.h"
#include "ir/errors.h"
#include "ir/sharding.h"
#include "multidevice/localize.h"
#include "multidevice/lower_reshardings.h"
#include "ops/attention.h"
#include "ops/matmul.h"
#include "ops/pointwise.h"
#include "ops/shape.h"
#include "passes/propagate_shardings.h"

namespace nvfuse {
namespace {

using testing::concrete_input;

constexpr int64_t kBatch = 2, kSeq = 16, kHeads = 8, kHeadDim = 4, kEmbed = kHeads * kHeadDim;

DeviceMesh devices(int64_t count) {
  std::vector<int64_t> ids;
  for (int64_t d = 0; d < count; ++d) {
    ids.push_back(d);
  }
  return DeviceMesh(ids);
}

void shard(TensorView* tv, const DeviceMesh& mesh, int64_t axis) {
  tv->set_device_mesh(mesh);
  if (axis >= 0) {
    tv->outer_split(axis, mesh.size());
    tv->axis(axis)->parallelize(ParallelType::DIDx);
  }
}

std::vector<Scalar*> sizes(Fusion& f, const std::vector<int64_t>& values) {
  std::vector<Scalar*> result;
  for (int64_t v : values) {
    result.push_back(f.index_constant(v));
  }
  return result;
}

// Axis `axis` of `in` cut to [begin, end); the others taken whole.
TensorView* cut(TensorView* in, int64_t axis, int64_t begin, int64_t end) {
  Fusion& f = *in->fusion();
  std::vector<Scalar*> starts, ends, steps;
  for (int64_t a = 0; a < in->rank(); ++a) {
    starts.push_back(f.index_constant(a == axis ? begin : 0));
    ends.push_back(a == axis ? f.index_constant(end) : in->logical()[a]->extent());
    steps.push_back(f.index_constant(1));
  }
  return slice(in, starts, ends, steps);
}

std::vector<int> sharded_axes(const TensorView* tv) { return sharding_of(*tv).mesh_axis; }

TEST(AxisFlow, ASplitReshapeShardsTheLeadingAxisOfItsGroup) {
  Fusion f;
  TensorView* qkv = concrete_input(f, {kBatch, kSeq, 3 * kEmbed}, DataType::Float);
  TensorView* heads = reshape(qkv, sizes(f, {kBatch, kSeq, kHeads, 3 * kHeadDim}));
  const AxisFlow flow = *axis_flow(*heads->definition(), 0);
  EXPECT_EQ(flow.to_output, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(flow.whole, (std::vector<bool>{false, false, false}));
  EXPECT_EQ(flow.resized, (std::vector<bool>{false, false, true}));
  // 8 heads split over 4 devices, not over 16.
  EXPECT_TRUE(keeps_sharding(flow, 2, *qkv, *heads, 4));
  EXPECT_FALSE(keeps_sharding(flow, 2, *qkv, *heads, 16));

  // Merging back: the inner axis of the group must be whole.
  TensorView* merged = reshape(heads, sizes(f, {kBatch, kSeq, 3 * kEmbed}));
  const AxisFlow back = *axis_flow(*merged->definition(), 0);
  EXPECT_EQ(back.to_output, (std::vector<int64_t>{0, 1, 2, -1}));
  EXPECT_EQ(back.whole, (std::vector<bool>{false, false, false, true}));
}

TEST(AxisFlow, ASliceNeedsItsCutAxesWhole) {
  Fusion f;
  TensorView* qkv = concrete_input(f, {kBatch, kSeq, kHeads, 3 * kHeadDim}, DataType::Float);
  TensorView* q = cut(qkv, 3, 0, kHeadDim);
  const AxisFlow flow = *axis_flow(*q->definition(), 0);
  EXPECT_EQ(flow.to_output, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(flow.whole, (std::vector<bool>{false, false, false, true}));
}

TEST(AxisFlow, CatAndPadNeedTheAxesTheyGrowWhole) {
  Fusion f;
  TensorView* x = concrete_input(f, {kBatch, kHeads, kHeadDim}, DataType::Float);
  TensorView* joined = cat({x, x}, 2);
  const AxisFlow cat_flow = *axis_flow(*joined->definition(), 1);
  EXPECT_EQ(cat_flow.to_output, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(cat_flow.whole, (std::vector<bool>{false, false, true}));
  TensorView* padded = pad(x, sizes(f, {1, 2}), f.constant(0.0, DataType::Double));
  const AxisFlow pad_flow = *axis_flow(*padded->definition(), 0);
  EXPECT_EQ(pad_flow.whole, (std::vector<bool>{false, false, true}));
}

// Seed 003's LoopSplitMHAFwd: qkv [B, S, H, 3E/H] sharded on H, sliced into
// q, k, v, permuted to [B, H, S, E/H], attention, permuted back.
TEST(PropagateShardings, SeedMhaKeepsHeadsShardedWithoutCommunication) {
  Fusion f;
  TensorView* qkv = concrete_input(f, {kBatch, kSeq, kHeads, 3 * kHeadDim}, DataType::Half);
  shard(qkv, devices(4), 2);
  std::vector<TensorView*> parts;
  for (int64_t i = 0; i < 3; ++i) {
    parts.push_back(permute(cut(qkv, 3, i * kHeadDim, (i + 1) * kHeadDim), {0, 2, 1, 3}));
  }
  const SdpfaFwdResult attn =
      sdpfa_fwd(parts[0], parts[1], parts[2], nullptr, f.constant(true, DataType::Bool), nullptr);
  TensorView* out = permute(attn.output, {0, 2, 1, 3});
  f.add_output(out);
  f.add_output(attn.log_sumexp);
  propagate_shardings(f);
  EXPECT_EQ(sharded_axes(parts[1]), (std::vector<int>{-1, 0, -1, -1}));
  EXPECT_EQ(sharded_axes(attn.output), (std::vector<int>{-1, 0, -1, -1}));
  EXPECT_EQ(sharded_axes(attn.log_sumexp), (std::vector<int>{-1, 0, -1}));
  EXPECT_EQ(sharded_axes(attn.philox_seed), (std::vector<int>{-1}));
  EXPECT_EQ(sharded_axes(out), (std::vector<int>{-1, -1, 0, -1}));
  EXPECT_TRUE(lower_reshardings(f).empty());
}

// The attention block: column-parallel qkv projection (heads outermost in
// its rows), reshape to heads, attention, reshape back, row-parallel output
// projection. The only communication is the Allreduce after it.
TEST(PropagateShardings, AttentionBlockNeedsOneAllreduce) {
  Fusion f;
  TensorView* x = concrete_input(f, {kBatch, kSeq, kEmbed}, DataType::BFloat16);
  TensorView* w_qkv = concrete_input(f, {3 * kEmbed, kEmbed}, DataType::BFloat16);
  TensorView* w_out = concrete_input(f, {kEmbed, kEmbed}, DataType::BFloat16);
  shard(w_qkv, devices(2), 0);
  shard(w_out, devices(2), 1);
  TensorView* qkv = linear(x, w_qkv, nullptr);
  TensorView* heads = reshape(qkv, sizes(f, {kBatch, kSeq, kHeads, 3 * kHeadDim}));
  std::vector<TensorView*> parts;
  for (int64_t i = 0; i < 3; ++i) {
    parts.push_back(permute(cut(heads, 3, i * kHeadDim, (i + 1) * kHeadDim), {0, 2, 1, 3}));
  }
  const SdpfaFwdResult attn = sdpfa_fwd(parts[0], parts[1], parts[2], nullptr, nullptr, nullptr);
  TensorView* merged = reshape(permute(attn.output, {0, 2, 1, 3}), sizes(f, {kBatch, kSeq, -1}));
  TensorView* y = linear(merged, w_out, nullptr);
  f.add_output(y);
  propagate_shardings(f);
  EXPECT_EQ(sharded_axes(x), (std::vector<int>{-1, -1, -1}));
  EXPECT_EQ(sharded_axes(heads), (std::vector<int>{-1, -1, 0, -1}));
  EXPECT_EQ(sharded_axes(merged), (std::vector<int>{-1, -1, 0}));
  const std::vector<Communication> comms = lower_reshardings(f);
  ASSERT_EQ(comms.size(), 1u);
  EXPECT_EQ(comms[0].type, CommunicationType::Allreduce);
  EXPECT_EQ(comms[0].tensor, y);
}

TEST(LowerReshardings, ShardedAxesAViewCannotKeepAreGathered) {
  Fusion f;
  // A cut of a sharded axis reads it whole.
  TensorView* x = concrete_input(f, {8, 6}, DataType::Float);
  shard(x, devices(2), 0);
  f.add_output(cut(x, 0, 1, 5));
  // Two heads do not split over four devices: the reshape reads the
  // sharded axis whole.
  TensorView* y = concrete_input(f, {2, 8}, DataType::Float);
  shard(y, devices(4), 1);
  f.add_output(reshape(y, sizes(f, {2, 2, 4})));
  propagate_shardings(f);
  EXPECT_EQ(sharded_axes(f.outputs()[0]->as<TensorView>()), (std::vector<int>{-1, -1}));
  const std::vector<Communication> comms = lower_reshardings(f);
  ASSERT_EQ(comms.size(), 2u);
  EXPECT_EQ(comms[0].type, CommunicationType::Allgather);
  EXPECT_EQ(comms[0].tensor, x);
  EXPECT_EQ(comms[1].type, CommunicationType::Allgather);
  EXPECT_EQ(comms[1].tensor, y);
}

TEST(LowerReshardings, AnOutputShardedAlongACutAxisIsUnsupported) {
  Fusion f;
  TensorView* x = concrete_input(f, {8, 6}, DataType::Float);
  shard(x, devices(2), -1);
  TensorView* part = cut(x, 0, 0, 4);
  shard(part, devices(2), 0);
  f.add_output(part);
  try {
    lower_reshardings(f);
    FAIL() << "expected an UnsupportedError";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("axis 0 sharded"), std::string::npos) << e.what();
  }
}

TEST(Localize, ReshapeSizesOfShardedAxesBecomeLocal) {
  Fusion f;
  TensorView* qkv = concrete_input(f, {kBatch, kSeq, 3 * kEmbed}, DataType::Float);
  shard(qkv, devices(4), 2);
  TensorView* heads = reshape(qkv, sizes(f, {kBatch, kSeq, kHeads, 3 * kHeadDim}));
  f.add_output(heads);
  propagate_shardings(f);
  localize(f);
  const Expr* local = heads->definition();
  EXPECT_EQ(local->input(3)->as<Scalar>()->constant_int(), kHeads / 4);
  EXPECT_EQ(local->input(4)->as<Scalar>()->constant_int(), 3 * kHeadDim);
  EXPECT_EQ(heads->logical()[2]->extent()->constant_int(), kHeads / 4);
}

}  // namespace
}  // namespace nvfuse
