// Each pass of the pass list (passes/pass_list.cpp) on a small fusion: the
// IR text after the pass, as NVFUSE_DUMP=preseg_ir prints it.
#include <gtest/gtest.h>

#include "fusion_builders.h"
#include "ir/all_exprs.h"
#include "ir/fusion.h"
#include "ir/sharding.h"
#include "ops/broadcast.h"
#include "ops/creation.h"
#include "ops/pointwise.h"
#include "ops/reduction.h"
#include "ops/shape.h"
#include "passes/duplicate_shared_iotas.h"
#include "passes/propagate_shardings.h"
#include "passes/relabel_size_one_reshapes.h"
#include "passes/remove_redundant_casts.h"
#include "passes/split_sharded_variances.h"
#include "passes/squeeze_trivial_reductions.h"

namespace nvfuse {
namespace {

using testing::concrete_input;
using testing::symbolic_input;

TensorView* tv_of(Val* v) { return v->as<TensorView>(); }

TEST(PassIr, RemoveRedundantCastsDropsAWideningRoundTrip) {
  Fusion f;
  TensorView* x = symbolic_input(f, 1, DataType::BFloat16);
  Val* wide = cast(x, DataType::Float);
  f.add_output(cast(pointwise(OpType::neg, {cast(wide, DataType::BFloat16)}), DataType::BFloat16));
  remove_redundant_casts(f);
  EXPECT_EQ(f.to_string(), R"(Inputs:
  T0_BFloat16[iS0{i0}]
Exprs:
  T2_BFloat16[iS2{i0}] = cast(T0)
  T3_BFloat16[iS3{i0}] = neg(T2)
  T4_BFloat16[iS4{i0}] = set(T3)
Outputs:
  T4
)") << f.to_string();
}

TEST(PassIr, RelabelSizeOneReshapesMakesASqueeze) {
  Fusion f;
  TensorView* a = concrete_input(f, {1, 6}, DataType::Float);
  f.add_output(pointwise(OpType::neg, {reshape(a, {f.index_constant(6)})}));
  relabel_size_one_reshapes(f);
  EXPECT_EQ(f.to_string(), R"(Inputs:
  T0_Float[iS0{1}, iS1{6}]
Exprs:
  T3_Float[iS4{6}] = squeeze(T0, dims=[0])
  T2_Float[iS3{6}] = neg(T3)
Outputs:
  T2
)") << f.to_string();
}

TEST(PassIr, SqueezeTrivialReductionsMakesASqueeze) {
  Fusion f;
  TensorView* a = concrete_input(f, {4, 1}, DataType::Float);
  f.add_output(reduce(OpType::add, a, {1}, false, DataType::Null));
  squeeze_trivial_reductions(f);
  EXPECT_EQ(f.to_string(), R"(Inputs:
  T0_Float[iS0{4}, iS1{1}]
Exprs:
  T2_Float[iS3{4}] = squeeze(T0, dims=[1])
Outputs:
  T2
)") << f.to_string();
}

TEST(PassIr, DuplicateSharedIotasGivesEachReaderItsOwn) {
  Fusion f;
  TensorView* i =
      iota(f.index_constant(4), f.index_constant(0), f.index_constant(1), DataType::Int);
  TensorView* rows = broadcast(i, {false, true});
  TensorView* cols = broadcast(i, {true, false});
  f.add_output(pointwise(OpType::ge, {rows, cols}));
  duplicate_shared_iotas(f);
  EXPECT_EQ(f.to_string(), R"(Inputs:
Exprs:
  T0_Int[iS0{4}] = iota(4, 0, 1)
  T1_Int[iS1{4}, bS2{1}] = broadcast(T0, is_broadcast_dim=[False, True])
  T4_Int[iS7{4}] = iota(4, 0, 1)
  T2_Int[bS3{1}, iS4{4}] = broadcast(T4, is_broadcast_dim=[True, False])
  T3_Bool[iS5{4}, iS6{4}] = ge(T1, T2)
Outputs:
  T3
)") << f.to_string();
}

TEST(PassIr, ShardingPassesSplitAVarianceOverAShardedAxis) {
  Fusion f;
  TensorView* x = symbolic_input(f, 2, DataType::Float);
  x->set_device_mesh(DeviceMesh({0, 1}));
  x->outer_split(1, 2);
  x->axis(1)->parallelize(did_of_mesh_axis(0));
  auto [var, mean] = var_mean(x, {1}, 0, false);
  f.add_output(var);
  f.add_output(mean);
  propagate_shardings(f);
  EXPECT_EQ(f.to_string(), R"(Inputs:
  T0_Float[iS0{i0}, iS1{i1}] loop=[iS0{i0}, iDIDx2{2}, iS3{i3}]
Exprs:
  T1_Float[iS4{i0}], T2_Float[iS5{i0}] = var_mean(T0, axes=[1], correction=0)
Outputs:
  T1
  T2
)") << f.to_string();
  split_sharded_variances(f);
  EXPECT_EQ(f.to_string(), R"(Inputs:
  T0_Float[iS0{i0}, iS1{i1}] loop=[iS0{i0}, iDIDx2{2}, iS3{i3}]
Exprs:
  T3_Float[iS6{i0}] = sum(T0, axes=[1])
  T4_Float[iS7{i0}] = div(T3, i1)
  T5_Float[iS8{i0}] = set(T4)
  T6_Float[iS9{i0}, bS10{1}] = broadcast(T5, is_broadcast_dim=[False, True])
  T7_Float[iS11{i0}, iS12{i1}] loop=[iS11{i0}, iDIDx21{2}, iS22{i11}] = sub(T0, T6)
  T8_Float[iS13{i0}, iS14{i1}] loop=[iS13{i0}, iDIDx23{2}, iS24{i13}] = mul(T7, T7)
  T9_Float[iS15{i0}] = sum(T8, axes=[1])
  i9_Index = maximum(i1, 0)
  T10_Float[iS16{i0}] = div(T9, i9)
  T11_Float[iS17{i0}] = set(T10)
  T12_Float[iS18{i0}] = set(T11)
  T13_Float[iS19{i0}] = set(T5)
  T14_Float[iS20{i0}] = set(T13)
Outputs:
  T12
  T14
)") << f.to_string();
}

}  // namespace
}  // namespace nvfuse
