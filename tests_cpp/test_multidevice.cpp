// Shardings read from loop domains, sharding propagation, and the lowering
// of reshardings to communications with their teams (no processes needed).
#include <gtest/gtest.h>

#include "fusion_builders.h"
#include "ir/all_exprs.h"
#include "ir/errors.h"
#include "ir/sharding.h"
#include "multidevice/local_shard.h"
#include "multidevice/lower_reshardings.h"
#include "ops/matmul.h"
#include "ops/pointwise.h"
#include "ops/reduction.h"
#include "passes/propagate_shardings.h"

namespace nvfuse {
namespace {

using testing::mesh_of;
using testing::symbolic_input;

TensorView* op(OpType type, std::vector<Val*> inputs) {
  return pointwise(type, std::move(inputs))->as<TensorView>();
}

// `tv` on `mesh`, logical axis `axis` outer-split over mesh axis `m`.
void shard(TensorView* tv, const DeviceMesh& mesh, int64_t axis, int m = 0) {
  tv->set_device_mesh(mesh);
  if (axis >= 0) {
    tv->outer_split(axis, mesh.size(m));
    tv->axis(axis)->parallelize(did_of_mesh_axis(m));
  }
}

TEST(Sharding, AnOuterSplitByTheDeviceCountIsReadBack) {
  // Seed 000: logical [D * S], allocation/loop [DIDx{D}, S].
  Fusion f;
  TensorView* x = symbolic_input(f, 1, DataType::Float);
  shard(x, mesh_of(4), 0);
  const Sharding s = sharding_of(*x);
  EXPECT_EQ(s.mesh_axis, (std::vector<int>{0}));
  EXPECT_TRUE(s.is_sharded());
  EXPECT_EQ(s.to_string(), "mesh DeviceMesh(shape=[4], devices=[0, 1, 2, 3]): axis 0 on DIDx")
      << s.to_string();
}

TEST(Sharding, BadAnnotationsAreDefinitionErrors) {
  Fusion f;
  TensorView* inner = symbolic_input(f, 1, DataType::Float);
  inner->set_device_mesh(mesh_of(2));
  inner->split(0, 2, /*inner_split=*/true);
  inner->axis(1)->parallelize(ParallelType::DIDx);
  EXPECT_THROW(sharding_of(*inner), Error);

  TensorView* wrong_parts = symbolic_input(f, 1, DataType::Float);
  wrong_parts->set_device_mesh(mesh_of(4));
  wrong_parts->outer_split(0, 2);
  wrong_parts->axis(0)->parallelize(ParallelType::DIDx);
  EXPECT_THROW(sharding_of(*wrong_parts), Error);

  TensorView* no_mesh = symbolic_input(f, 1, DataType::Float);
  no_mesh->axis(0)->parallelize(ParallelType::DIDx);
  EXPECT_THROW(sharding_of(*no_mesh), Error);
}

TEST(PropagateShardings, PointwiseResultsFollowTheirShardedInput) {
  Fusion f;
  TensorView* x = symbolic_input(f, 2, DataType::Float);
  TensorView* y = symbolic_input(f, 2, DataType::Float);
  shard(x, mesh_of(2), 0);
  TensorView* out = op(OpType::relu, {op(OpType::add, {x, y})});
  f.add_output(out);
  propagate_shardings(f);
  EXPECT_EQ(sharding_of(*out).mesh_axis, (std::vector<int>{0, -1}));
  // The unannotated input is sharded like its consumer: no communication.
  EXPECT_EQ(sharding_of(*y).mesh_axis, (std::vector<int>{0, -1}));
  EXPECT_TRUE(lower_reshardings(f).empty());
}

TEST(LowerReshardings, A2DMeshGivesDisjointTeams) {
  // Seed 001: mesh {{0,1,2,3},{4,5,6,7}}, tv0 [DIDx{i1}, DIDy{i2}],
  // tv1 = set(tv0) [DIDx{i1}, i2]: Allgathers among {0..3} and {4..7}.
  Fusion f;
  const DeviceMesh mesh({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  TensorView* tv0 = symbolic_input(f, 2, DataType::Float);
  tv0->set_device_mesh(mesh);
  tv0->axis(0)->parallelize(ParallelType::DIDx);
  tv0->axis(1)->parallelize(ParallelType::DIDy);
  TensorView* tv1 = op(OpType::set, {tv0});
  tv1->set_device_mesh(mesh);
  tv1->axis(0)->parallelize(ParallelType::DIDx);
  f.add_output(tv1);
  const std::vector<Communication> comms = lower_reshardings(f);
  ASSERT_EQ(comms.size(), 1u);
  const Communication& c = comms[0];
  EXPECT_EQ(c.type, CommunicationType::Allgather);
  EXPECT_EQ(c.tensor, tv0);
  EXPECT_EQ(c.axis, 1);
  EXPECT_EQ(c.teams(), (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(c.team_of(6), (std::vector<int64_t>{4, 5, 6, 7}));
  EXPECT_TRUE(c.team_of(9).empty());  // not in the mesh: skips it
  EXPECT_EQ(c.to_string(), "Allgather T0 axis 1 over {0,1,2,3} {4,5,6,7}");
}

TEST(LowerReshardings, TensorParallelMlpNeedsOneAllreduce) {
  // Seed 003: column-parallel linear -> GELU -> row-parallel linear.
  Fusion f;
  const DeviceMesh mesh = mesh_of(4);
  TensorView* x = symbolic_input(f, 2, DataType::BFloat16);   // [M, E]
  TensorView* w1 = symbolic_input(f, 2, DataType::BFloat16);  // [4E, E]
  TensorView* b1 = symbolic_input(f, 1, DataType::BFloat16);  // [4E]
  TensorView* w2 = symbolic_input(f, 2, DataType::BFloat16);  // [E, 4E]
  shard(w1, mesh, 0);
  shard(b1, mesh, 0);
  shard(w2, mesh, 1);
  TensorView* h = linear(x, w1, b1);
  TensorView* g = op(OpType::tanh, {h});
  TensorView* y = linear(g, w2, nullptr);
  f.add_output(y);
  propagate_shardings(f);
  EXPECT_EQ(sharding_of(*x).mesh_axis, (std::vector<int>{-1, -1}));
  EXPECT_EQ(sharding_of(*h).mesh_axis, (std::vector<int>{-1, 0}));
  EXPECT_EQ(sharding_of(*g).mesh_axis, (std::vector<int>{-1, 0}));
  EXPECT_EQ(sharding_of(*y).mesh_axis, (std::vector<int>{-1, -1}));
  const std::vector<Communication> comms = lower_reshardings(f);
  ASSERT_EQ(comms.size(), 1u);
  EXPECT_EQ(comms[0].type, CommunicationType::Allreduce);
  EXPECT_EQ(comms[0].tensor, y);
  EXPECT_EQ(comms[0].reduce_op, OpType::add);
  EXPECT_EQ(comms[0].teams(), (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}}));
}

TEST(LowerReshardings, ASumOverAShardedAxisIsAnAllreduceOrAReduceScatter) {
  Fusion f;
  const DeviceMesh mesh = mesh_of(2);
  TensorView* x = symbolic_input(f, 2, DataType::Float);
  shard(x, mesh, 1);
  TensorView* whole = reduce(OpType::maximum, x, {1}, false, DataType::Null);
  f.add_output(whole);
  propagate_shardings(f);
  auto comms = lower_reshardings(f);
  ASSERT_EQ(comms.size(), 1u);
  EXPECT_EQ(comms[0].type, CommunicationType::Allreduce);
  EXPECT_EQ(comms[0].reduce_op, OpType::maximum);

  Fusion g;
  TensorView* a = symbolic_input(g, 2, DataType::Float);
  shard(a, mesh, 1);
  TensorView* scattered = reduce(OpType::add, a, {1}, false, DataType::Null);
  shard(scattered, mesh, 0);  // the result is wanted sharded on its axis 0
  g.add_output(scattered);
  comms = lower_reshardings(g);
  ASSERT_EQ(comms.size(), 1u);
  EXPECT_EQ(comms[0].type, CommunicationType::ReduceScatter);
  EXPECT_EQ(comms[0].axis, 0);
}

TEST(LowerReshardings, MovingBetweenMeshesUsesRootedCollectives) {
  Fusion f;
  TensorView* x = symbolic_input(f, 1, DataType::Float);
  x->set_device_mesh(DeviceMesh(std::vector<int64_t>{0}));
  TensorView* scattered = op(OpType::set, {x});
  shard(scattered, mesh_of(3), 0);
  TensorView* broadcast = op(OpType::set, {x});
  broadcast->set_device_mesh(mesh_of(3));
  TensorView* gathered = op(OpType::set, {scattered});
  gathered->set_device_mesh(DeviceMesh(std::vector<int64_t>{2}));
  f.add_output(broadcast);
  f.add_output(gathered);
  const auto comms = lower_reshardings(f);
  ASSERT_EQ(comms.size(), 3u);
  auto making = [&](const TensorView* tv) {
    for (const Communication& c : comms) {
      if (c.expr->output(0) == tv) {
        return c;
      }
    }
    ADD_FAILURE() << "no communication makes " << tv->name();
    return comms[0];
  };
  EXPECT_EQ(making(scattered).type, CommunicationType::Scatter);
  EXPECT_EQ(making(scattered).root, 0);
  EXPECT_EQ(making(broadcast).type, CommunicationType::Broadcast);
  EXPECT_EQ(making(gathered).type, CommunicationType::Gather);
  EXPECT_EQ(making(gathered).root, 2);
  EXPECT_EQ(making(gathered).team_of(1), (std::vector<int64_t>{0, 1, 2}));
}

TEST(LowerReshardings, ASumOfTheShardedAxisOntoOneDeviceIsAReduce) {
  Fusion f;
  TensorView* x = symbolic_input(f, 2, DataType::Float);
  shard(x, mesh_of(4), 0);
  TensorView* total = reduce(OpType::maximum, x, {0}, false, DataType::Null);
  total->set_device_mesh(DeviceMesh(std::vector<int64_t>{3}));
  // Summing the other axis keeps the shards apart: they are gathered.
  TensorView* rows = reduce(OpType::add, x, {1}, false, DataType::Null);
  rows->set_device_mesh(DeviceMesh(std::vector<int64_t>{3}));
  f.add_output(total);
  f.add_output(rows);
  const auto comms = lower_reshardings(f);
  ASSERT_EQ(comms.size(), 2u);
  EXPECT_EQ(comms[0].type, CommunicationType::Reduce);
  EXPECT_EQ(comms[0].root, 3);
  EXPECT_EQ(comms[0].reduce_op, OpType::maximum);
  EXPECT_EQ(comms[0].tensor, total);
  EXPECT_EQ(comms[0].team_of(1), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(comms[1].type, CommunicationType::Gather);
}

TEST(LowerReshardings, ACopyThatKeepsTheShardingCommunicatesNothing) {
  Fusion f;
  TensorView* x = symbolic_input(f, 2, DataType::Float);
  shard(x, mesh_of(2), 0);
  TensorView* copy = op(OpType::set, {x});
  f.add_output(copy);
  propagate_shardings(f);
  EXPECT_EQ(sharding_of(*copy), sharding_of(*x));
  EXPECT_TRUE(lower_reshardings(f).empty());
}

}  // namespace
}  // namespace nvfuse

namespace nvfuse {
namespace {

TEST(LocalShard, SeedZerosShardIsTheLocalSliceOfTheLogicalAxis) {
  // Seed 000: logical [D * S] with allocation [DIDx{D}, S] binds a local [S].
  Fusion f;
  TensorView* x = testing::symbolic_input(f, 2, DataType::Float);
  x->set_device_mesh(DeviceMesh({2, 2}, {0, 1, 2, 3}));
  x->outer_split(1, 2);
  x->axis(1)->parallelize(ParallelType::DIDy);
  const Sharding s = sharding_of(*x);
  EXPECT_EQ(local_sizes(s, {5, 8}, "T0"), (std::vector<int64_t>{5, 4}));
  EXPECT_EQ(global_sizes(s, {5, 4}), (std::vector<int64_t>{5, 8}));
  // Device 3 is at (1, 1): the second half of axis 1; axis 0 is whole.
  EXPECT_EQ(local_range(s, 3, 1, {5, 8}), (std::pair<int64_t, int64_t>{4, 8}));
  EXPECT_EQ(local_range(s, 2, 1, {5, 8}), (std::pair<int64_t, int64_t>{0, 4}));
  EXPECT_EQ(local_range(s, 3, 0, {5, 8}), (std::pair<int64_t, int64_t>{0, 5}));
  try {
    local_sizes(s, {5, 7}, "T0");
    ADD_FAILURE() << "an uneven split was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInput);
    EXPECT_NE(std::string(e.what()).find("T0: axis 1 of extent 7 does not split evenly"),
        std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace nvfuse
