// The pointwise scheduler and code generator, without a GPU: iteration
// plans and params from synthetic tensors, generated code checked as text,
// and every kernel compiled with NVRTC for sm_90.
#include <gtest/gtest.h>

#include "codegen/pointwise_codegen.h"
#include "fusion_builders.h"
#include "ir/allocation_strides.h"
#include "ir/fusion.h"
#include "ops/broadcast.h"
#include "ops/pointwise.h"
#include "runtime/cuda/nvrtc.h"
#include "schedule/pointwise_params.h"

namespace nvfuse {
namespace {

constexpr int kSm90 = 90;

TensorView* input(Fusion& f, int64_t rank, DataType dtype) {
  return testing::symbolic_input(f, rank, dtype);
}

TensorArg contiguous(DataType dtype, std::vector<int64_t> sizes, uint64_t address = 0) {
  std::vector<int64_t> strides(sizes.size(), 1);
  for (int64_t i = static_cast<int64_t>(sizes.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * sizes[i + 1];
  }
  return {dtype, sizes, strides, address};
}

struct Planned {
  PointwiseAnalysis analysis;
  PointwiseSchedule schedule;
  KernelSource source;
};

// Schedules `f` for the given input tensors (outputs laid out by their
// allocation domains, sized like the first output's shape) and generates.
Planned plan(const Fusion& f, const std::vector<TensorArg>& inputs,
    const std::vector<int64_t>& output_sizes) {
  std::string why_not;
  auto analysis = analyze_pointwise(f, &why_not);
  EXPECT_TRUE(analysis.has_value()) << why_not;
  std::vector<TensorArg> outputs;
  for (const TensorView* tv : analysis->outputs) {
    outputs.push_back({tv->dtype(), output_sizes, strides_for_allocation(*tv, output_sizes), 0});
  }
  PointwiseSchedule schedule =
      schedule_pointwise(*analysis, inputs, outputs, DeviceInfo{132, kSm90});
  KernelSource source = generate_pointwise_kernel(f, *analysis, schedule.params);
  return {std::move(*analysis), std::move(schedule), std::move(source)};
}

void expect_compiles(const KernelSource& source) {
  CompiledBinary binary = compile_cuda(source.code, source.name, kSm90);
  EXPECT_FALSE(binary.image.empty());
  EXPECT_FALSE(binary.is_ptx) << "NVRTC should know sm_90";
}

TEST(PointwiseCodegen, AddOfTwoFloatTensorsIsVectorizedAndReadable) {
  Fusion f;
  TensorView* a = input(f, 2, DataType::Float);
  TensorView* b = input(f, 2, DataType::Float);
  f.add_output(pointwise(OpType::add, {a, b}));
  Planned p =
      plan(f, {contiguous(DataType::Float, {256, 1024}), contiguous(DataType::Float, {256, 1024})},
          {256, 1024});
  EXPECT_EQ(p.schedule.params.collapsed_rank, 1);  // contiguous: merged flat
  EXPECT_EQ(p.schedule.params.vector_width, 4);    // 16 bytes of float
  EXPECT_TRUE(p.schedule.params.index_32bit);
  EXPECT_NE(p.source.code.find("const float t2 = (t0 + t1);  // T2_Float"), std::string::npos)
      << p.source.code;
  expect_compiles(p.source);
}

TEST(PointwiseCodegen, BFloat16MathIsDoneInFloatAndRoundedOnce) {
  Fusion f;
  TensorView* a = input(f, 1, DataType::BFloat16);
  f.add_output(pointwise(OpType::sin, {a}));
  Planned p = plan(f, {contiguous(DataType::BFloat16, {4096})}, {4096});
  EXPECT_EQ(p.schedule.params.vector_width, 8);  // 16 bytes of bf16
  EXPECT_NE(p.source.code.find("nvfuse::cast<nvfuse::BFloat16>(sinf(nvfuse::cast<float>(t0)))"),
      std::string::npos)
      << p.source.code;
  expect_compiles(p.source);
}

// A bf16 [64, 512] activation times a float tensor of `float_sizes`, cast
// back to bf16, planned in `f`.
Planned plan_bf16_times_float(Fusion& f, const std::vector<int64_t>& float_sizes) {
  TensorView* x = input(f, 2, DataType::BFloat16);
  TensorView* y = input(f, static_cast<int64_t>(float_sizes.size()), DataType::Float);
  f.add_output(cast(pointwise(OpType::mul, {x, y}), DataType::BFloat16));
  return plan(f,
      {contiguous(DataType::BFloat16, {64, 512}), contiguous(DataType::Float, float_sizes)},
      {64, 512});
}

TEST(PointwiseCodegen, AFloatRowEveryRowReadsTakesTwoLoadsBesideBFloat16Vectors) {
  // A per-channel float scale beside a bf16 activation: the scale's row is
  // read again by every row (cached), so it takes two 16-byte loads where
  // the streamed bf16 tensors take one each.
  Fusion f;
  Planned p = plan_bf16_times_float(f, {512});
  EXPECT_EQ(p.schedule.params.vector_width, 8);
  EXPECT_NE(p.source.code.find("nvfuse::Array<float, 8>"), std::string::npos) << p.source.code;
  expect_compiles(p.source);
}

TEST(PointwiseCodegen, AStreamedFloatTensorKeepsItsVectorsToSixteenBytes) {
  Fusion f;
  Planned p = plan_bf16_times_float(f, {64, 512});
  EXPECT_EQ(p.schedule.params.vector_width, 4);
}

TEST(PointwiseCodegen, RowBroadcastKeepsTwoAxesWithAStrideZeroOuterAxis) {
  Fusion f;
  TensorView* x = input(f, 2, DataType::Float);
  TensorView* bias = input(f, 1, DataType::Float);
  f.add_output(pointwise(OpType::add, {x, bias}));
  Planned p = plan(
      f, {contiguous(DataType::Float, {64, 512}), contiguous(DataType::Float, {512})}, {64, 512});
  const IterationSpace& space = p.schedule.space;
  ASSERT_EQ(space.extents, (std::vector<int64_t>{64, 512}));
  EXPECT_EQ(space.strides[1], (std::vector<int64_t>{0, 1}));  // the bias
  EXPECT_EQ(p.schedule.params.vector_width, 4);
  expect_compiles(p.source);
}

TEST(PointwiseCodegen, ColumnBroadcastLoadsOneValuePerVector) {
  Fusion f;
  TensorView* x = input(f, 2, DataType::Float);
  TensorView* column = input(f, 2, DataType::Float);
  f.add_output(pointwise(OpType::mul, {x, column}));
  TensorArg col = contiguous(DataType::Float, {64, 1});
  Planned p = plan(f, {contiguous(DataType::Float, {64, 512}), col}, {64, 512});
  EXPECT_EQ(p.schedule.params.inner_access[1], InnerAccess::kBroadcast);
  EXPECT_NE(p.source.code.find("in_t1[u].val[0] = args.t1[offset_t1[u]];"), std::string::npos)
      << p.source.code;
  expect_compiles(p.source);
}

TEST(PointwiseCodegen, MisalignedInputStepsTheVectorWidthDown) {
  Fusion f;
  TensorView* a = input(f, 1, DataType::Float);
  f.add_output(pointwise(OpType::neg, {a}));
  // A view starting one float into an allocation: 4-byte aligned only.
  Planned p = plan(f, {contiguous(DataType::Float, {1024}, 4)}, {1024});
  EXPECT_EQ(p.schedule.params.vector_width, 1);
  expect_compiles(p.source);
}

TEST(PointwiseCodegen, TransposedInputIsTiledThroughSharedMemory) {
  Fusion f;
  TensorView* a = input(f, 2, DataType::Float);
  TensorView* b = input(f, 2, DataType::Float);
  f.add_output(pointwise(OpType::add, {a, b}));
  TensorArg transposed{DataType::Float, {128, 64}, {1, 128}, 0};
  Planned p = plan(f, {transposed, contiguous(DataType::Float, {128, 64})}, {128, 64});
  const PointwiseParams& params = p.schedule.params;
  EXPECT_EQ(params.collapsed_rank, 2);
  ASSERT_TRUE(params.transpose.enabled());
  EXPECT_EQ(params.transpose.axis, 0);
  EXPECT_EQ(params.transpose.tile, 64);
  EXPECT_EQ(params.vector_width, 4);
  EXPECT_EQ(params.transpose.transposed, (std::vector<bool>{true, false, false}));
  EXPECT_EQ(p.schedule.grid_size, 2 * 1);  // 128 / 64 by 64 / 64 tiles
  EXPECT_NE(p.source.code.find("__shared__ float tile_t0[kTile][kTile + 1];"), std::string::npos)
      << p.source.code;
  // The transposed input along its contiguous axis (k), the other along i.
  EXPECT_NE(
      p.source.code.find("(args.t0 + base_t0 + k + i * args.stride_t0[1])"), std::string::npos);
  EXPECT_NE(
      p.source.code.find("(args.t1 + base_t1 + k * args.stride_t1[0] + i)"), std::string::npos);
  expect_compiles(p.source);
}

TEST(PointwiseCodegen, OutputInAnotherLayoutIsWrittenFromATile) {
  Fusion f;
  TensorView* a = input(f, 2, DataType::Half);
  auto* out = pointwise(OpType::relu, {a})->as<TensorView>();
  auto* copy = pointwise(OpType::neg, {a})->as<TensorView>();
  out->set_allocation_domain({out->logical()[1], out->logical()[0]}, {true, true});
  f.add_output(copy);  // row-major, like the input: the iteration order
  f.add_output(out);
  Planned p = plan(f, {contiguous(DataType::Half, {100, 300})}, {100, 300});
  const TransposeTiling& tiling = p.schedule.params.transpose;
  ASSERT_TRUE(tiling.enabled());
  EXPECT_EQ(tiling.tile, 64);
  EXPECT_EQ(p.schedule.params.vector_width, 4);
  EXPECT_EQ(tiling.transposed, (std::vector<bool>{false, false, true}));
  EXPECT_EQ(p.schedule.grid_size, 2 * 5);  // partial tiles at both edges
  EXPECT_NE(
      p.source.code.find("__shared__ nvfuse::Half tile_t1[kTile][kTile + 1];"), std::string::npos)
      << p.source.code;
  EXPECT_NE(p.source.code.find("transposed outputs"), std::string::npos);
  expect_compiles(p.source);
}

TEST(PointwiseCodegen, PermutedBatchedInputTilesItsContiguousAxis) {
  Fusion f;
  TensorView* a = input(f, 3, DataType::BFloat16);
  f.add_output(pointwise(OpType::sigmoid, {a}));
  // permute(0, 2, 1) of a contiguous (8, 48, 64) tensor.
  TensorArg permuted{DataType::BFloat16, {8, 64, 48}, {48 * 64, 1, 64}, 0};
  Planned p = plan(f, {permuted}, {8, 64, 48});
  const TransposeTiling& tiling = p.schedule.params.transpose;
  ASSERT_TRUE(tiling.enabled());
  EXPECT_EQ(tiling.axis, 1);
  EXPECT_EQ(p.schedule.grid_size, 8 * 1 * 1);
  EXPECT_NE(p.source.code.find("const Index base_t0 = c0 * args.stride_t0[0];"), std::string::npos)
      << p.source.code;
  expect_compiles(p.source);
}

TEST(PointwiseCodegen, OddExtentsReadTransposedTilesElementByElement) {
  Fusion f;
  TensorView* a = input(f, 2, DataType::BFloat16);
  f.add_output(pointwise(OpType::neg, {a}));
  TensorArg transposed{DataType::BFloat16, {513, 257}, {1, 513}, 0};
  Planned p = plan(f, {transposed}, {513, 257});
  ASSERT_TRUE(p.schedule.params.transpose.enabled());
  EXPECT_EQ(p.schedule.params.vector_width, 1);
  EXPECT_NE(p.source.code.find("tile_t0[kTile][kTile + 2];"), std::string::npos);
  expect_compiles(p.source);
}

TEST(PointwiseCodegen, ShortTransposedAxesStayWithThePointwiseKernel) {
  Fusion f;
  TensorView* a = input(f, 2, DataType::Float);
  f.add_output(pointwise(OpType::exp, {a}));
  TensorArg transposed{DataType::Float, {128, 8}, {1, 128}, 0};
  Planned p = plan(f, {transposed}, {128, 8});
  EXPECT_FALSE(p.schedule.params.transpose.enabled());
  EXPECT_EQ(p.schedule.params.vector_width, 1);
  EXPECT_EQ(p.schedule.params.inner_access[0], InnerAccess::kStrided);
  expect_compiles(p.source);
}

TEST(PointwiseCodegen, TensorsContiguousAlongDifferentAxesStayPointwise) {
  Fusion f;
  TensorView* a = input(f, 3, DataType::Float);
  TensorView* b = input(f, 3, DataType::Float);
  f.add_output(pointwise(OpType::mul, {a, b}));
  TensorArg along_0{DataType::Float, {32, 32, 32}, {1, 32 * 32, 32}, 0};
  TensorArg along_1{DataType::Float, {32, 32, 32}, {32 * 32, 1, 32}, 0};
  Planned p = plan(f, {along_0, along_1}, {32, 32, 32});
  EXPECT_FALSE(p.schedule.params.transpose.enabled());
  expect_compiles(p.source);
}

TEST(PointwiseCodegen, TransposeTilesShrinkToFitSharedMemory) {
  IterationSpace space;
  space.extents = {256, 256};
  space.strides.assign(3, {1, 256});  // three transposed fp32 tensors
  space.strides.push_back({256, 1});
  std::vector<TensorArg> tensors(4, contiguous(DataType::Float, {256, 256}));
  // 64 x 65 x 4 bytes x 3 is over 48 KB.
  auto tiling = choose_transpose_tiling(space, tensors, /*tile=*/64);
  ASSERT_TRUE(tiling.has_value());
  EXPECT_EQ(tiling->tile, 32);
  space.strides.assign(13, {1, 256});  // 13 x 32 x 33 x 4 bytes: over 48 KB
  space.strides.push_back({256, 1});
  tensors.assign(14, contiguous(DataType::Float, {256, 256}));
  EXPECT_FALSE(choose_transpose_tiling(space, tensors).has_value());
}

TEST(PointwiseCodegen, OutputStrideOrderSetsTheIterationOrder) {
  Fusion f;
  TensorView* a = input(f, 2, DataType::Float);
  auto* out = pointwise(OpType::relu, {a})->as<TensorView>();
  out->set_allocation_domain({out->logical()[1], out->logical()[0]}, {true, true});
  f.add_output(out);
  // The input has the same (column-major) layout: contiguous and flat.
  TensorArg column_major{DataType::Float, {32, 48}, {1, 32}, 0};
  Planned p = plan(f, {column_major}, {32, 48});
  EXPECT_EQ(p.schedule.params.collapsed_rank, 1);
  EXPECT_EQ(p.schedule.params.vector_width, 4);
  expect_compiles(p.source);
}

TEST(PointwiseCodegen, HugeTensorsUse64BitIndexing) {
  Fusion f;
  TensorView* a = input(f, 1, DataType::BFloat16);
  f.add_output(pointwise(OpType::abs, {a}));
  const int64_t n = (int64_t{1} << 31) + 16;
  Planned p = plan(f, {contiguous(DataType::BFloat16, {n})}, {n});
  EXPECT_FALSE(p.schedule.params.index_32bit);
  EXPECT_NE(p.source.code.find("typedef nvfuse::int64 Index;"), std::string::npos);
  expect_compiles(p.source);
}

TEST(PointwiseCodegen, ScalarsAreKernelArgumentsAndConstantsAreLiterals) {
  Fusion f;
  TensorView* a = input(f, 1, DataType::Half);
  auto* s = f.create<Scalar>(DataType::Double, std::nullopt);
  f.add_input(s);
  Val* scaled = pointwise(OpType::mul, {a, s});
  f.add_output(pointwise(OpType::add, {scaled, f.constant(ScalarValue(1e-5), DataType::Double)}));
  Planned p = plan(f, {contiguous(DataType::Half, {1000})}, {1000});
  EXPECT_NE(p.source.code.find("double " + s->to_string() + ";"), std::string::npos);
  EXPECT_NE(p.source.code.find("static_cast<float>(1.0000000000000001e-05)"), std::string::npos)
      << p.source.code;
  expect_compiles(p.source);
}

TEST(PointwiseAnalysis, RejectsReductionsAndComplexValues) {
  Fusion f;
  TensorView* a = input(f, 1, DataType::ComplexFloat);
  f.add_output(pointwise(OpType::exp, {a}));
  std::string why_not;
  EXPECT_FALSE(analyze_pointwise(f, &why_not).has_value());
  EXPECT_NE(why_not.find("ComplexFloat"), std::string::npos) << why_not;
}

// Every op of the table, for every dtype it accepts, in one kernel per op.
class EveryOpCompiles : public ::testing::TestWithParam<OpInfo> {};

TEST_P(EveryOpCompiles, ForEveryDtypeItAccepts) {
  const OpInfo& info = GetParam();
  Fusion f;
  int outputs = 0;
  for (DataType dtype : {DataType::Double, DataType::Float, DataType::Half, DataType::BFloat16,
           DataType::Int, DataType::Int32, DataType::Bool}) {
    std::vector<Val*> operands;
    for (int i = 0; i < info.arity; ++i) {
      const DataType operand_dtype = (info.op == OpType::where && i == 0) ? DataType::Bool : dtype;
      operands.push_back(input(f, 1, operand_dtype));
    }
    try {
      f.add_output(pointwise(info.op, operands));
      ++outputs;
    } catch (const Error& e) {
      ASSERT_EQ(e.kind(), ErrorKind::kDefinitionType) << e.what();
    }
  }
  ASSERT_GT(outputs, 0) << info.name << " accepts no generated dtype";
  std::string why_not;
  auto analysis = analyze_pointwise(f, &why_not);
  ASSERT_TRUE(analysis.has_value()) << why_not;
  // Arguments for the inputs the kernel reads, in the analysis's order.
  std::vector<TensorArg> inputs;
  for (const TensorView* tv : analysis->inputs) {
    inputs.push_back(contiguous(tv->dtype(), {4096}));
  }
  std::vector<TensorArg> outs;
  for (const TensorView* tv : analysis->outputs) {
    outs.push_back(contiguous(tv->dtype(), {4096}));
  }
  PointwiseSchedule schedule = schedule_pointwise(*analysis, inputs, outs, DeviceInfo{132, kSm90});
  expect_compiles(generate_pointwise_kernel(f, *analysis, schedule.params));
}

std::vector<OpInfo> generated_ops() {
  std::vector<OpInfo> ops;
  for (const OpInfo& info : all_pointwise_ops()) {
    if (info.op != OpType::imag) {  // complex only
      ops.push_back(info);
    }
  }
  return ops;
}

INSTANTIATE_TEST_SUITE_P(PointwiseOps, EveryOpCompiles, ::testing::ValuesIn(generated_ops()),
    [](const ::testing::TestParamInfo<OpInfo>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace nvfuse
