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
Planned plan(
    const Fusion& f,
    const std::vector<TensorArg>& inputs,
    const std::vector<int64_t>& output_sizes) {
  std::string why_not;
  auto analysis = analyze_pointwise(f, &why_not);
  EXPECT_TRUE(analysis.has_value()) << why_not;
  std::vector<TensorArg> outputs;
  for (const TensorView* tv : analysis->outputs) {
    outputs.push_back({tv->dtype(), output_sizes,
                       strides_for_allocation(*tv, output_sizes), 0});
  }
  PointwiseSchedule schedule =
      schedule_pointwise(*analysis, inputs, outputs, DeviceInfo{132, kSm90});
  KernelSource source =
      generate_pointwise_kernel(f, *analysis, schedule.params);
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
  Planned p = plan(f, {contiguous(DataType::Float, {256, 1024}),
                       contiguous(DataType::Float, {256, 1024})},
                   {256, 1024});
  EXPECT_EQ(p.schedule.params.collapsed_rank, 1);  // contiguous: merged flat
  EXPECT_EQ(p.schedule.params.vector_width, 4);    // 16 bytes of float
  EXPECT_TRUE(p.schedule.params.index_32bit);
  EXPECT_NE(p.source.code.find("const float t2 = (t0 + t1);  // T2_Float"),
            std::string::npos)
      << p.source.code;
  expect_compiles(p.source);
}

TEST(PointwiseCodegen, BFloat16MathIsDoneInFloatAndRoundedOnce) {
  Fusion f;
  TensorView* a = input(f, 1, DataType::BFloat16);
  f.add_output(pointwise(OpType::sin, {a}));
  Planned p = plan(f, {contiguous(DataType::BFloat16, {4096})}, {4096});
  EXPECT_EQ(p.schedule.params.vector_width, 8);  // 16 bytes of bf16
  EXPECT_NE(p.source.code.find(
                "nvfuse::cast<nvfuse::BFloat16>(sinf(nvfuse::cast<float>(t0)))"),
            std::string::npos)
      << p.source.code;
  expect_compiles(p.source);
}

TEST(PointwiseCodegen, RowBroadcastKeepsTwoAxesWithAStrideZeroOuterAxis) {
  Fusion f;
  TensorView* x = input(f, 2, DataType::Float);
  TensorView* bias = input(f, 1, DataType::Float);
  f.add_output(pointwise(OpType::add, {x, bias}));
  Planned p = plan(f, {contiguous(DataType::Float, {64, 512}),
                       contiguous(DataType::Float, {512})},
                   {64, 512});
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
  EXPECT_NE(p.source.code.find("in_t1[u].val[0] = args.t1[offset_t1[u]];"),
            std::string::npos)
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

TEST(PointwiseCodegen, TransposedInputIsReadWithStrides) {
  Fusion f;
  TensorView* a = input(f, 2, DataType::Float);
  f.add_output(pointwise(OpType::exp, {a}));
  TensorArg transposed{DataType::Float, {128, 64}, {1, 128}, 0};
  Planned p = plan(f, {transposed}, {128, 64});
  EXPECT_EQ(p.schedule.params.collapsed_rank, 2);
  EXPECT_EQ(p.schedule.params.vector_width, 1);
  EXPECT_EQ(p.schedule.params.inner_access[0], InnerAccess::kStrided);
  expect_compiles(p.source);
}

TEST(PointwiseCodegen, OutputStrideOrderSetsTheIterationOrder) {
  Fusion f;
  TensorView* a = input(f, 2, DataType::Float);
  auto* out = pointwise(OpType::relu, {a})->as<TensorView>();
  out->set_allocation_domain(
      {out->logical()[1], out->logical()[0]}, {true, true});
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
  EXPECT_NE(p.source.code.find("static_cast<float>(1.0000000000000001e-05)"),
            std::string::npos)
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
  for (DataType dtype : {DataType::Double, DataType::Float, DataType::Half,
                         DataType::BFloat16, DataType::Int, DataType::Int32,
                         DataType::Bool}) {
    std::vector<Val*> operands;
    for (int i = 0; i < info.arity; ++i) {
      const DataType operand_dtype =
          (info.op == OpType::where && i == 0) ? DataType::Bool : dtype;
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
  PointwiseSchedule schedule =
      schedule_pointwise(*analysis, inputs, outs, DeviceInfo{132, kSm90});
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

INSTANTIATE_TEST_SUITE_P(
    PointwiseOps,
    EveryOpCompiles,
    ::testing::ValuesIn(generated_ops()),
    [](const ::testing::TestParamInfo<OpInfo>& info) {
      return std::string(info.param.name);
    });

}  // namespace
}  // namespace nvfuse
