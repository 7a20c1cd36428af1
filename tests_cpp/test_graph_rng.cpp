// Random kernels for launches recorded into a CUDA graph (the params'
// graph_rng, codegen/index_values.h): they read torch's graph-safe seed and
// offset through device pointers; every other kernel keeps its by-value
// keys, which cost no registers. Checked as text and compiled with NVRTC.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "codegen/coordinate_codegen.h"
#include "codegen/philox.cuh"
#include "fusion_builders.h"
#include "ir/fusion.h"
#include "ops/creation.h"
#include "ops/pointwise.h"
#include "runtime/cuda/nvrtc.h"
#include "schedule/coordinate_analysis.h"
#include "schedule/coordinate_params.h"

namespace nvfuse {
namespace {

using testing::concrete_input;

KernelSource dropout_kernel(bool graph_rng) {
  static Fusion f;
  static std::optional<CoordinateAnalysis> analysis = [] {
    TensorView* x = concrete_input(f, {64, 512}, DataType::Float);
    f.add_output(pointwise(OpType::mul, {x, rand_like(x, RngSeed{})}));
    std::string why_not;
    auto analyzed = analyze_coordinates(f, &why_not);
    EXPECT_TRUE(analyzed.has_value()) << why_not;
    return analyzed;
  }();
  const TensorArg tensor{DataType::Float, {64, 512}, {512, 1}, 0};
  CoordinateSchedule schedule = schedule_coordinates({64, 512}, {tensor, tensor}, 0);
  schedule.params.graph_rng = graph_rng;
  return generate_coordinate_kernel(f, *analysis, schedule.params);
}

TEST(GraphRng, PlainKernelsTakeTheirKeysByValue) {
  const KernelSource source = dropout_kernel(false);
  EXPECT_EQ(source.code.find("graph_rng"), std::string::npos);
  EXPECT_NE(source.code.find("nvfuse::uint64(args.seed_0)"), std::string::npos);
  EXPECT_GT(compile_cuda(source.code, source.name, 90).image.size(), 0u);
}

TEST(GraphRng, GraphKernelsReadTheGeneratorStateOnTheDevice) {
  const KernelSource source = dropout_kernel(true);
  EXPECT_NE(source.code.find("const long long* graph_rng_seed;"), std::string::npos);
  EXPECT_NE(source.code.find("nvfuse_philox::drawn_seed(args.graph_rng_seed, args.seed_0)"),
      std::string::npos);
  EXPECT_NE(source.code.find("nvfuse_philox::drawn_offset(args.graph_rng_offset, args.offset_0)"),
      std::string::npos);
  EXPECT_GT(compile_cuda(source.code, source.name, 90).image.size(), 0u);
}

TEST(GraphRng, DrawnKeysAreThePointedToStateInACaptureAndTheValuesOutside) {
  const long long seed = 123;
  const long long offset = 40;
  EXPECT_EQ(nvfuse_philox::drawn_seed(nullptr, 7), 7u);
  EXPECT_EQ(nvfuse_philox::drawn_offset(nullptr, 8), 8u);
  EXPECT_EQ(nvfuse_philox::drawn_seed(&seed, 0), 123u);
  EXPECT_EQ(nvfuse_philox::drawn_offset(&offset, 4), 44u);  // within the graph: + 4
}

}  // namespace
}  // namespace nvfuse
