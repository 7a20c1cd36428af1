// Conversions between nvfuse and ATen types, and the argument type of
// execute(): a tensor or a Python number.
#pragma once

#include <ATen/core/Tensor.h>

#include <variant>

#include "ir/data_type.h"
#include "ir/scalar_value.h"

namespace nvfuse {

at::ScalarType to_aten(DataType dtype);
// Throws an InputTypeError for ATen types nvfuse has no DataType for.
DataType from_aten(at::ScalarType type);
at::Scalar to_aten_scalar(const ScalarValue& value);
ScalarValue from_aten_scalar(const at::Scalar& value);

using Argument = std::variant<at::Tensor, ScalarValue>;

}  // namespace nvfuse
