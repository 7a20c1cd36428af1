#include "ir/data_type.h"

#include "ir/errors.h"

namespace nvfuse {

const char* name_of(DataType dtype) {
  switch (dtype) {
#define NVFUSE_DATA_TYPE_NAME(name, bytes, category) \
  case DataType::name:                               \
    return #name;
    NVFUSE_DATA_TYPES(NVFUSE_DATA_TYPE_NAME)
#undef NVFUSE_DATA_TYPE_NAME
  }
  return "<unknown DataType>";
}

std::ostream& operator<<(std::ostream& os, DataType dtype) { return os << name_of(dtype); }

int64_t size_in_bytes(DataType dtype) {
  switch (dtype) {
#define NVFUSE_DATA_TYPE_SIZE(name, bytes, category) \
  case DataType::name:                               \
    return bytes;
    NVFUSE_DATA_TYPES(NVFUSE_DATA_TYPE_SIZE)
#undef NVFUSE_DATA_TYPE_SIZE
  }
  return 0;
}

TypeCategory category_of(DataType dtype) {
  switch (dtype) {
#define NVFUSE_DATA_TYPE_CATEGORY(name, bytes, category) \
  case DataType::name:                                   \
    return TypeCategory::category;
    NVFUSE_DATA_TYPES(NVFUSE_DATA_TYPE_CATEGORY)
#undef NVFUSE_DATA_TYPE_CATEGORY
  }
  return TypeCategory::kNone;
}

bool is_reduced_float(DataType t) {
  return t == DataType::Half || t == DataType::BFloat16 || is_float8(t);
}

bool is_float8(DataType t) { return t == DataType::Float8_e4m3fn || t == DataType::Float8_e5m2; }

namespace {

// Rank within a category: a wider type has a higher rank.
int width_rank(DataType t) {
  switch (t) {
    case DataType::Int32:
      return 1;
    case DataType::Int:
    case DataType::Index:
      return 2;
    case DataType::Half:
    case DataType::BFloat16:
      return 1;
    case DataType::Float:
      return 2;
    case DataType::Double:
      return 3;
    case DataType::ComplexFloat:
      return 1;
    case DataType::ComplexDouble:
      return 2;
    default:
      return 0;
  }
}

}  // namespace

DataType promote_types(DataType a, DataType b) {
  if (a == b) {
    return a;
  }
  if (a == DataType::Null) {
    return b;
  }
  if (b == DataType::Null) {
    return a;
  }
  if (a == DataType::Bool) {
    return b;
  }
  if (b == DataType::Bool) {
    return a;
  }
  NVFUSE_TYPE_CHECK(!is_float8(a) && !is_float8(b), "type promotion between ", a, " and ", b,
      " is not defined (as in torch); cast one operand explicitly");
  NVFUSE_TYPE_CHECK(a != DataType::UInt64 && b != DataType::UInt64, "type promotion between ", a,
      " and ", b,
      " is not supported (as in torch); cast one operand "
      "explicitly");
  const TypeCategory ca = category_of(a);
  const TypeCategory cb = category_of(b);
  if (ca == TypeCategory::kComplex || cb == TypeCategory::kComplex) {
    if (ca == cb) {
      return width_rank(a) >= width_rank(b) ? a : b;
    }
    const DataType complex = ca == TypeCategory::kComplex ? a : b;
    const DataType other = ca == TypeCategory::kComplex ? b : a;
    // torch: ComplexFloat with Double gives ComplexDouble.
    return other == DataType::Double ? DataType::ComplexDouble : complex;
  }
  if (ca == TypeCategory::kFloat && cb == TypeCategory::kFloat) {
    if (width_rank(a) == width_rank(b)) {
      return DataType::Float;  // Half with BFloat16
    }
    return width_rank(a) > width_rank(b) ? a : b;
  }
  if (ca == TypeCategory::kFloat) {
    return a;
  }
  if (cb == TypeCategory::kFloat) {
    return b;
  }
  // Both integral.
  if (a == DataType::Index || b == DataType::Index) {
    return DataType::Index;
  }
  return width_rank(a) >= width_rank(b) ? a : b;
}

DataType real_type_of(DataType t) {
  if (t == DataType::ComplexFloat) {
    return DataType::Float;
  }
  if (t == DataType::ComplexDouble) {
    return DataType::Double;
  }
  return t;
}

DataType complex_type_of(DataType t) {
  if (t == DataType::Double || t == DataType::ComplexDouble) {
    return DataType::ComplexDouble;
  }
  return DataType::ComplexFloat;
}

bool is_lossless_cast(DataType from, DataType to) {
  if (from == to) {
    return true;
  }
  switch (to) {
    case DataType::Double:
      return from == DataType::Float || from == DataType::Half || from == DataType::BFloat16 ||
          is_float8(from) || from == DataType::Int32 || from == DataType::Bool;
    case DataType::Float:
      return from == DataType::Half || from == DataType::BFloat16 || is_float8(from) ||
          from == DataType::Bool;
    case DataType::Half:
    case DataType::BFloat16:
      return is_float8(from) || from == DataType::Bool;
    case DataType::Int:
    case DataType::Index:
      return from == DataType::Int32 || from == DataType::Bool || from == DataType::Int ||
          from == DataType::Index;
    case DataType::Int32:
      return from == DataType::Bool;
    case DataType::ComplexDouble:
      return from == DataType::ComplexFloat || is_lossless_cast(from, DataType::Double);
    case DataType::ComplexFloat:
      return is_lossless_cast(from, DataType::Float);
    default:
      return false;
  }
}

}  // namespace nvfuse
