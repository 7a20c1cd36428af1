#include <gtest/gtest.h>

#include "ir/data_type.h"
#include "ir/errors.h"
#include "ir/scalar_value.h"

namespace nvfuse {
namespace {

TEST(DataType, PromoteTypesFollowsTorch) {
  EXPECT_EQ(promote_types(DataType::Bool, DataType::Int32), DataType::Int32);
  EXPECT_EQ(promote_types(DataType::Int32, DataType::Int), DataType::Int);
  EXPECT_EQ(promote_types(DataType::Int, DataType::Half), DataType::Half);
  EXPECT_EQ(promote_types(DataType::Half, DataType::BFloat16), DataType::Float);
  EXPECT_EQ(promote_types(DataType::BFloat16, DataType::Double), DataType::Double);
  EXPECT_EQ(promote_types(DataType::ComplexFloat, DataType::Double), DataType::ComplexDouble);
  EXPECT_EQ(promote_types(DataType::ComplexFloat, DataType::Float), DataType::ComplexFloat);
}

TEST(DataType, PromoteTypesRejectsMixedFloat8) {
  try {
    promote_types(DataType::Float8_e4m3fn, DataType::Float);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kDefinitionType);
  }
}

TEST(DataType, LosslessCastsWidenOnly) {
  EXPECT_TRUE(is_lossless_cast(DataType::BFloat16, DataType::Float));
  EXPECT_TRUE(is_lossless_cast(DataType::Int32, DataType::Double));
  EXPECT_FALSE(is_lossless_cast(DataType::Float, DataType::BFloat16));
  EXPECT_FALSE(is_lossless_cast(DataType::Int, DataType::Double));
  EXPECT_FALSE(is_lossless_cast(DataType::Half, DataType::BFloat16));
}

TEST(ScalarValue, PrintsPythonLiteralsThatReadBack) {
  EXPECT_EQ(ScalarValue(1e-5).to_python(), "1e-05");
  EXPECT_EQ(ScalarValue(2.0).to_python(), "2.0");
  EXPECT_EQ(ScalarValue(int64_t{3}).to_python(), "3");
  EXPECT_EQ(ScalarValue(true).to_python(), "True");
  EXPECT_EQ(ScalarValue(-INFINITY).to_python(), "float('-inf')");
  EXPECT_EQ(ScalarValue(std::complex<double>(1.0, -2.0)).to_python(), "complex(1.0, -2.0)");
}

TEST(ScalarValue, NanConstantsCompareEqualSoDefinitionsHashAlike) {
  EXPECT_EQ(ScalarValue(NAN), ScalarValue(NAN));
  EXPECT_NE(ScalarValue(0.0), ScalarValue(-0.0));
}

}  // namespace
}  // namespace nvfuse

namespace nvfuse {
namespace {

TEST(ScalarValue, CastRoundsToTheTargetPrecision) {
  EXPECT_EQ(ScalarValue(0.1).cast_to(DataType::Float).as_double(), static_cast<double>(0.1f));
  EXPECT_EQ(ScalarValue(0.1).cast_to(DataType::BFloat16).as_double(), 0.10009765625);
  EXPECT_EQ(ScalarValue(0.1).cast_to(DataType::Half).as_double(), 0.0999755859375);
  EXPECT_EQ(ScalarValue(1e-8).cast_to(DataType::Half).as_double(),
      0.0);  // below half's smallest subnormal / 2
  EXPECT_TRUE(std::isinf(ScalarValue(70000.0).cast_to(DataType::Half).as_double()));
  EXPECT_EQ(ScalarValue(2.5).cast_to(DataType::Int).as_int(), 2);
}

}  // namespace
}  // namespace nvfuse
