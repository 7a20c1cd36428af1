// Element types of tensors and scalars, and torch's type-promotion lattice.
#pragma once

#include <cstdint>
#include <ostream>
#include <string_view>

namespace nvfuse {

// X(name, bytes, category). `Index` is the kernel's index type (int64 or
// int32, chosen per kernel); for promotion it behaves as Int. `UInt64`
// exists for torch.uint64 tensors: no generated kernel takes it (they run
// on the reference evaluator) and, as in torch, it promotes only with
// itself and Bool.
#define NVFUSE_DATA_TYPES(X)     \
  X(Double, 8, kFloat)           \
  X(Float, 4, kFloat)            \
  X(Half, 2, kFloat)             \
  X(BFloat16, 2, kFloat)         \
  X(Int, 8, kInt)                \
  X(Int32, 4, kInt)              \
  X(Index, 8, kInt)              \
  X(Bool, 1, kBool)              \
  X(ComplexFloat, 8, kComplex)   \
  X(ComplexDouble, 16, kComplex) \
  X(Float8_e4m3fn, 1, kFloat)    \
  X(Float8_e5m2, 1, kFloat)      \
  X(UInt64, 8, kInt)             \
  X(Null, 0, kNone)

enum class DataType {
#define NVFUSE_DATA_TYPE_ENUM(name, bytes, category) name,
  NVFUSE_DATA_TYPES(NVFUSE_DATA_TYPE_ENUM)
#undef NVFUSE_DATA_TYPE_ENUM
};

enum class TypeCategory { kBool, kInt, kFloat, kComplex, kNone };

const char* name_of(DataType dtype);  // "Float", as in Python's DataType.Float
std::ostream& operator<<(std::ostream& os, DataType dtype);
int64_t size_in_bytes(DataType dtype);
TypeCategory category_of(DataType dtype);

inline bool is_boolean(DataType t) { return t == DataType::Bool; }
inline bool is_integral(DataType t) { return category_of(t) == TypeCategory::kInt; }
inline bool is_floating(DataType t) { return category_of(t) == TypeCategory::kFloat; }
inline bool is_complex(DataType t) { return category_of(t) == TypeCategory::kComplex; }
// Types that torch computes in float ("opmath") and rounds on store.
bool is_reduced_float(DataType t);
bool is_float8(DataType t);

// torch.promote_types. Throws a definition type error for pairs torch
// refuses (float8 mixed with another type).
DataType promote_types(DataType a, DataType b);
// ComplexFloat -> Float, ComplexDouble -> Double, others unchanged.
DataType real_type_of(DataType t);
// Float (and narrower) -> ComplexFloat, Double -> ComplexDouble.
DataType complex_type_of(DataType t);
// True when every value of `from` is exactly representable in `to`.
bool is_lossless_cast(DataType from, DataType to);

}  // namespace nvfuse
