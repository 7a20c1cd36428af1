// Decomposing reshardings into host steps, and localizing compute
// segments (no processes needed).
#include <gtest/gtest.h>

#include "fusion_builders.h"
#include "ir/all_exprs.h"
#include "ir/errors.h"
#include "ir/sharding.h"
#include "multidevice/insert_communications.h"
#include "multidevice/localize.h"
#include "passes/split_sharded_variances.h"
#include "ops/matmul.h"
#include "ops/pointwise.h"
#include "ops/reduction.h"
#include "passes/propagate_shardings.h"
#include "segment/aten_segmenter.h"

namespace nvfuse {
namespace {

using testing::symbolic_input;

DeviceMesh two_devices() { return DeviceMesh(std::vector<int64_t>{0, 1}); }

void shard(TensorView* tv, const DeviceMesh& mesh, int64_t axis) {
  tv->set_device_mesh(mesh);
  if (axis >= 0) {
    tv->outer_split(axis, mesh.size());
    tv->axis(axis)->parallelize(ParallelType::DIDx);
  }
}

TEST(InsertCommunications, AnAllreduceFollowsThePartialResult) {
  // Seed 003's row-parallel linear: y = x @ w.T with K sharded.
  Fusion f;
  TensorView* x = symbolic_input(f, 2, DataType::Float);
  TensorView* w = symbolic_input(f, 2, DataType::Float);
  shard(x, two_devices(), 1);
  shard(w, two_devices(), 1);
  TensorView* y = linear(x, w, nullptr);
  TensorView* z = pointwise(OpType::relu, {y})->as<TensorView>();
  f.add_output(y);
  f.add_output(z);
  propagate_shardings(f);
  const HostSteps steps = insert_communications(f);
  ASSERT_EQ(steps.communications.size(), 1u);
  const Communication& allreduce = steps.communications[0];
  EXPECT_EQ(allreduce.type, CommunicationType::Allreduce);
  EXPECT_EQ(allreduce.tensor, y);  // the partial result
  const Val* combined = allreduce.expr->output(0);
  // Consumers and the fusion's outputs now read the combined result.
  EXPECT_EQ(f.outputs()[0], combined);
  EXPECT_EQ(z->definition()->input(0), combined);
  EXPECT_TRUE(steps.local_slices.empty());
  // One compute segment (linear), the Allreduce, one compute segment (relu).
  const auto segments = segment_at_host_steps(f, {allreduce.expr});
  ASSERT_EQ(segments.size(), 3u);
  EXPECT_TRUE(segments[1].is_aten);
}

TEST(InsertCommunications, AReduceScatterLeavesTheUnshardedPartialBehind) {
  Fusion f;
  TensorView* x = symbolic_input(f, 2, DataType::Float);
  shard(x, two_devices(), 0);
  TensorView* y = reduce(OpType::add, x, {0}, false, DataType::Null);
  shard(y, two_devices(), 0);
  f.add_output(y);
  propagate_shardings(f);
  const HostSteps steps = insert_communications(f);
  ASSERT_EQ(steps.communications.size(), 1u);
  EXPECT_EQ(steps.communications[0].type, CommunicationType::ReduceScatter);
  EXPECT_EQ(sharding_of(*y).mesh_axis, (std::vector<int>{-1}));
  EXPECT_EQ(sharding_of(*f.outputs()[0]->as<TensorView>()).mesh_axis, (std::vector<int>{0}));
}

TEST(InsertCommunications, AReduceLeavesThePartialOnTheInputsMesh) {
  Fusion f;
  TensorView* x = symbolic_input(f, 2, DataType::Float);
  shard(x, two_devices(), 0);
  TensorView* y = reduce(OpType::add, x, {0}, false, DataType::Null);
  y->set_device_mesh(DeviceMesh(std::vector<int64_t>{1}));
  f.add_output(y);
  propagate_shardings(f);
  const HostSteps steps = insert_communications(f);
  ASSERT_EQ(steps.communications.size(), 1u);
  const Communication& comm = steps.communications[0];
  EXPECT_EQ(comm.type, CommunicationType::Reduce);
  EXPECT_EQ(comm.root, 1);
  EXPECT_EQ(comm.tensor, y);
  // The partial sums live on both devices, whole; the combined one on the root.
  EXPECT_EQ(*y->device_mesh(), two_devices());
  EXPECT_EQ(sharding_of(*y).mesh_axis, (std::vector<int>{-1}));
  const auto& combined = *f.outputs()[0]->as<TensorView>();
  EXPECT_EQ(&combined, comm.expr->output(0));
  EXPECT_EQ(*combined.device_mesh(), DeviceMesh(std::vector<int64_t>{1}));
}

TEST(InsertCommunications, AGatheredInputIsASetTheExprReads) {
  Fusion f;
  TensorView* x = symbolic_input(f, 2, DataType::Float);
  shard(x, two_devices(), 0);
  TensorView* y = pointwise(OpType::neg, {x})->as<TensorView>();
  y->set_device_mesh(two_devices());  // replicated
  f.add_output(y);
  propagate_shardings(f);
  const HostSteps steps = insert_communications(f);
  ASSERT_EQ(steps.communications.size(), 1u);
  const Communication& gather = steps.communications[0];
  EXPECT_EQ(gather.type, CommunicationType::Allgather);
  EXPECT_EQ(gather.tensor, x);
  EXPECT_EQ(y->definition()->input(0), gather.expr->output(0));
  EXPECT_FALSE(sharding_of(*gather.expr->output(0)->as<TensorView>()).is_sharded());
}

TEST(InsertCommunications, AnInputReadTwiceIsGatheredOnce) {
  Fusion f;
  TensorView* x = symbolic_input(f, 1, DataType::Float);
  shard(x, two_devices(), 0);
  TensorView* y = pointwise(OpType::mul, {x, x})->as<TensorView>();
  y->set_device_mesh(two_devices());
  f.add_output(y);
  propagate_shardings(f);
  const HostSteps steps = insert_communications(f);
  ASSERT_EQ(steps.communications.size(), 1u);
  EXPECT_EQ(y->definition()->input(0), steps.communications[0].expr->output(0));
  EXPECT_EQ(y->definition()->input(1), steps.communications[0].expr->output(0));
}

TEST(InsertCommunications, AWholeOperandOfAShardedExprIsSlicedLocally) {
  Fusion f;
  TensorView* a = symbolic_input(f, 1, DataType::Float);
  TensorView* b = symbolic_input(f, 1, DataType::Float);
  shard(a, two_devices(), 0);
  shard(b, two_devices(), -1);  // whole on every device
  TensorView* sum = pointwise(OpType::add, {a, b})->as<TensorView>();
  f.add_output(sum);
  propagate_shardings(f);
  const HostSteps steps = insert_communications(f);
  EXPECT_TRUE(steps.communications.empty());
  ASSERT_EQ(steps.local_slices.size(), 1u);
  EXPECT_EQ(steps.local_slices[0]->input(0), b);
  EXPECT_EQ(sum->definition()->input(1), steps.local_slices[0]->output(0));
}

TEST(Localize, ShardedAxesTakeLocalExtentsAndLoseTheirMesh) {
  Fusion f;
  TensorView* x = testing::concrete_input(f, {8, 3}, DataType::Float);
  TensorView* y = symbolic_input(f, 2, DataType::Float);
  shard(x, two_devices(), 0);
  shard(y, two_devices(), 1);
  f.add_output(pointwise(OpType::neg, {x}));
  f.add_output(pointwise(OpType::neg, {y}));
  propagate_shardings(f);
  Scalar* y_global = y->logical()[1]->extent();
  Scalar* y_whole = y->logical()[0]->extent();
  localize(f);
  EXPECT_EQ(x->logical()[0]->extent()->constant_int(), 4);
  EXPECT_EQ(x->logical()[1]->extent()->constant_int(), 3);
  EXPECT_NE(y->logical()[1]->extent(), y_global);
  EXPECT_EQ(y->logical()[0]->extent(), y_whole);
  for (const Val* out : f.outputs()) {
    EXPECT_FALSE(out->as<TensorView>()->device_mesh().has_value());
    EXPECT_EQ(out->as<TensorView>()->loop_rank(), 2);
  }
  // A clone (what the executor takes) sees the new extents in order.
  auto copy = f.clone();
  EXPECT_EQ(copy->inputs()[0]->as<TensorView>()->logical()[0]->extent()->constant_int(), 4);
}

TEST(Localize, AnUnevenConstantSplitIsADefinitionError) {
  Fusion f;
  TensorView* x = testing::concrete_input(f, {7}, DataType::Float);
  shard(x, two_devices(), 0);
  f.add_output(pointwise(OpType::neg, {x}));
  propagate_shardings(f);
  EXPECT_THROW(localize(f), Error);
}

TEST(Localize, AScalarNamingAShardedExtentKeepsItsGlobalValue) {
  // mean over a sharded symbolic axis divides by the global count.
  Fusion f;
  TensorView* x = symbolic_input(f, 2, DataType::Float);
  shard(x, two_devices(), 0);
  Scalar* global = x->logical()[0]->extent();
  TensorView* scaled = pointwise(OpType::div, {x, global})->as<TensorView>();
  f.add_output(scaled);
  propagate_shardings(f);
  localize(f);
  const Val* divisor = scaled->definition()->input(1);
  EXPECT_NE(divisor, global);
  ASSERT_NE(divisor->definition(), nullptr);  // local extent times 2
  EXPECT_EQ(divisor->definition()->input(0), x->logical()[0]->extent());
  EXPECT_EQ(divisor->definition()->input(1)->as<Scalar>()->constant_int(), 2);
}

TEST(SplitShardedVariances, AVarMeanOverAShardedAxisBecomesTwoAllreducedSums) {
  Fusion f;
  TensorView* x = symbolic_input(f, 2, DataType::BFloat16);
  shard(x, two_devices(), 1);
  auto [var, mean] = var_mean(x, {1}, /*correction=*/1, /*keepdim=*/false);
  f.add_output(var);
  f.add_output(mean);
  // Over the unsharded axis it stays one var_mean.
  auto [rows_var, rows_mean] = var_mean(x, {0}, 0, false);
  f.add_output(rows_var);
  propagate_shardings(f);
  split_sharded_variances(f);
  int var_means = 0;
  for (const Expr* expr : f.exprs()) {
    var_means += expr->is<VarMeanOp>();
  }
  EXPECT_EQ(var_means, 1);
  EXPECT_NE(f.outputs()[0], var);
  EXPECT_EQ(f.outputs()[0]->dtype(), DataType::BFloat16);
  EXPECT_EQ(f.outputs()[2], rows_var);
  const HostSteps steps = insert_communications(f);
  ASSERT_EQ(steps.communications.size(), 2u);
  for (const Communication& comm : steps.communications) {
    EXPECT_EQ(comm.type, CommunicationType::Allreduce);
    EXPECT_EQ(comm.tensor->dtype(), DataType::Float);  // bf16 sums in fp32
  }
}

}  // namespace
}  // namespace nvfuse
