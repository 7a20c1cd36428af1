// The one table of pointwise ops. A row here gives the op its enum value,
// its name (printing, hashing, Python `fd.ops.<name>`), its arity and
// parameter names (Python bindings), its result-type rule and the type
// categories it accepts. Semantics live in one switch per backend
// (reference evaluator, code generator), each checked for exhaustiveness.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "ir/data_type.h"

namespace nvfuse {

// How an op's compute and result dtype follow from its promoted operands.
enum class Promotion {
  kCommon,      // compute in, and return, the common (torch) type
  kIntToFloat,  // like kCommon, but bool/int compute in Float (torch default)
  kToBool,      // compute in the common type, return Bool
  kToReal,      // compute in the common type, return its real type
};

// Accepted type categories of the common (promoted) type.
enum AcceptBits : uint8_t {
  kAcceptBool = 1,
  kAcceptInt = 2,
  kAcceptFloat = 4,
  kAcceptComplex = 8,
};

// X(name, arity, promotion, accepts, python parameter names, in_python)
// In `accepts`, B/I/F/C are the AcceptBits (spelled out in op_table.cpp).
// The first operand of `where` (the condition) does not take part in type
// promotion; see first_promoted_operand().
#define NVFUSE_POINTWISE_OPS(X)                                        \
  /* unary */                                                          \
  X(abs, 1, kToReal, I | F | C, "arg", true)                           \
  X(acos, 1, kIntToFloat, B | I | F | C, "arg", true)                  \
  X(acosh, 1, kIntToFloat, B | I | F | C, "arg", true)                 \
  X(asin, 1, kIntToFloat, B | I | F | C, "arg", true)                  \
  X(asinh, 1, kIntToFloat, B | I | F | C, "arg", true)                 \
  X(atan, 1, kIntToFloat, B | I | F | C, "arg", true)                  \
  X(atanh, 1, kIntToFloat, B | I | F | C, "arg", true)                 \
  X(bitwise_not, 1, kCommon, B | I, "arg", true)                       \
  X(ceil, 1, kCommon, I | F, "arg", true)                              \
  X(cos, 1, kIntToFloat, B | I | F | C, "arg", true)                   \
  X(cosh, 1, kIntToFloat, B | I | F | C, "arg", true)                  \
  X(erf, 1, kIntToFloat, B | I | F, "arg", true)                       \
  X(erfc, 1, kIntToFloat, B | I | F, "arg", true)                      \
  X(erfcinv, 1, kIntToFloat, B | I | F, "arg", true)                   \
  X(erfinv, 1, kIntToFloat, B | I | F, "arg", true)                    \
  X(exp, 1, kIntToFloat, B | I | F | C, "arg", true)                   \
  X(exp2, 1, kIntToFloat, B | I | F | C, "arg", true)                  \
  X(expm1, 1, kIntToFloat, B | I | F | C, "arg", true)                 \
  X(floor, 1, kCommon, I | F, "arg", true)                             \
  X(frac, 1, kCommon, F, "arg", true)                                  \
  X(isfinite, 1, kToBool, B | I | F | C, "arg", true)                  \
  X(isinf, 1, kToBool, B | I | F | C, "arg", true)                     \
  X(isnan, 1, kToBool, B | I | F | C, "arg", true)                     \
  X(isneginf, 1, kToBool, B | I | F, "arg", true)                      \
  X(isposinf, 1, kToBool, B | I | F, "arg", true)                      \
  X(isreal, 1, kToBool, B | I | F | C, "arg", true)                    \
  X(lgamma, 1, kIntToFloat, B | I | F, "arg", true)                    \
  X(log, 1, kIntToFloat, B | I | F | C, "arg", true)                   \
  X(log10, 1, kIntToFloat, B | I | F | C, "arg", true)                 \
  X(log1p, 1, kIntToFloat, B | I | F | C, "arg", true)                 \
  X(log2, 1, kIntToFloat, B | I | F | C, "arg", true)                  \
  X(logical_not, 1, kToBool, B | I | F | C, "arg", true)               \
  X(neg, 1, kCommon, I | F | C, "arg", true)                           \
  X(reciprocal, 1, kIntToFloat, B | I | F | C, "arg", true)            \
  X(relu, 1, kCommon, I | F, "arg", true)                              \
  X(round, 1, kCommon, I | F, "arg", true)                             \
  X(rsqrt, 1, kIntToFloat, B | I | F | C, "arg", true)                 \
  X(sigmoid, 1, kIntToFloat, B | I | F | C, "arg", true)               \
  X(sign, 1, kCommon, B | I | F, "arg", true)                          \
  X(signbit, 1, kToBool, B | I | F, "arg", true)                       \
  X(silu, 1, kIntToFloat, B | I | F | C, "arg", true)                  \
  X(sin, 1, kIntToFloat, B | I | F | C, "arg", true)                   \
  X(sinh, 1, kIntToFloat, B | I | F | C, "arg", true)                  \
  X(sqrt, 1, kIntToFloat, B | I | F | C, "arg", true)                  \
  X(tan, 1, kIntToFloat, B | I | F | C, "arg", true)                   \
  X(tanh, 1, kIntToFloat, B | I | F | C, "arg", true)                  \
  X(trunc, 1, kCommon, I | F, "arg", true)                             \
  X(set, 1, kCommon, B | I | F | C, "arg", true)                       \
  X(segment_set, 1, kCommon, B | I | F | C, "arg", true)               \
  X(real, 1, kToReal, B | I | F | C, "arg", true)                      \
  X(imag, 1, kToReal, C, "arg", true)                                  \
  /* binary */                                                         \
  X(add, 2, kCommon, B | I | F | C, "arg1,arg2", true)                 \
  X(sub, 2, kCommon, I | F | C, "arg1,arg2", true)                     \
  X(mul, 2, kCommon, B | I | F | C, "arg1,arg2", true)                 \
  X(div, 2, kCommon, I | F | C, "arg1,arg2", true)                     \
  X(truediv, 2, kIntToFloat, B | I | F | C, "arg1,arg2", true)         \
  X(fmod, 2, kCommon, I | F, "arg1,arg2", true)                        \
  X(mod, 2, kCommon, I | F, "arg1,arg2", true)                         \
  X(remainder, 2, kCommon, I | F, "arg1,arg2", true)                   \
  X(pow, 2, kCommon, I | F | C, "arg1,arg2", true)                     \
  X(atan2, 2, kIntToFloat, B | I | F, "arg1,arg2", true)               \
  X(maximum, 2, kCommon, B | I | F, "arg1,arg2", true)                 \
  X(minimum, 2, kCommon, B | I | F, "arg1,arg2", true)                 \
  X(eq, 2, kToBool, B | I | F | C, "arg1,arg2", true)                  \
  X(ne, 2, kToBool, B | I | F | C, "arg1,arg2", true)                  \
  X(lt, 2, kToBool, B | I | F, "arg1,arg2", true)                      \
  X(le, 2, kToBool, B | I | F, "arg1,arg2", true)                      \
  X(gt, 2, kToBool, B | I | F, "arg1,arg2", true)                      \
  X(ge, 2, kToBool, B | I | F, "arg1,arg2", true)                      \
  X(logical_and, 2, kToBool, B | I | F | C, "arg1,arg2", true)         \
  X(logical_or, 2, kToBool, B | I | F | C, "arg1,arg2", true)          \
  X(bitwise_and, 2, kCommon, B | I, "arg1,arg2", true)                 \
  X(bitwise_or, 2, kCommon, B | I, "arg1,arg2", true)                  \
  X(bitwise_xor, 2, kCommon, B | I, "arg1,arg2", true)                 \
  X(bitwise_left_shift, 2, kCommon, I, "arg1,arg2", true)              \
  X(bitwise_right_shift, 2, kCommon, I, "arg1,arg2", true)             \
  X(gcd, 2, kCommon, I, "arg1,arg2", true)                             \
  X(nextafter, 2, kCommon, F, "arg1,arg2", true)                       \
  /* ternary and wider */                                              \
  X(add_alpha, 3, kCommon, B | I | F | C, "arg1,arg2,alpha", true)     \
  X(sub_alpha, 3, kCommon, I | F | C, "arg1,arg2,alpha", true)         \
  X(where, 3, kCommon, B | I | F | C, "pred,arg1,arg2", true)          \
  X(lerp, 3, kCommon, F | C, "start,end,weight", true)                 \
  X(clamp, 3, kCommon, I | F, "arg,min,max", true)                     \
  X(threshold, 3, kCommon, I | F, "arg,threshold,value", true)         \
  X(addcmul, 4, kCommon, I | F | C, "arg,tensor1,tensor2,value", true) \
  /* internal: index and extent arithmetic */                          \
  X(ceil_div, 2, kCommon, I, "arg1,arg2", false)

enum class OpType {
#define NVFUSE_OP_TYPE_ENUM(name, ...) name,
  NVFUSE_POINTWISE_OPS(NVFUSE_OP_TYPE_ENUM)
#undef NVFUSE_OP_TYPE_ENUM
};

struct OpInfo {
  OpType op;
  const char* name;
  int arity;
  Promotion promotion;
  uint8_t accepts;
  const char* parameters;  // comma-separated Python parameter names
  bool in_python;
};

const OpInfo& info_of(OpType op);
const char* name_of(OpType op);
std::optional<OpType> op_type_named(std::string_view name);
const std::vector<OpInfo>& all_pointwise_ops();
// Operands before this index do not take part in type promotion.
int first_promoted_operand(OpType op);
// True when `dtype`'s category is in `accepts`.
bool accepts_dtype(uint8_t accepts, DataType dtype);

}  // namespace nvfuse
