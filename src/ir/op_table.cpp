#include "ir/op_table.h"

#include "ir/errors.h"

namespace nvfuse {

namespace {
// Short names for the `accepts` column of NVFUSE_POINTWISE_OPS.
constexpr uint8_t B = kAcceptBool;
constexpr uint8_t I = kAcceptInt;
constexpr uint8_t F = kAcceptFloat;
constexpr uint8_t C = kAcceptComplex;
}  // namespace

const std::vector<OpInfo>& all_pointwise_ops() {
  static const std::vector<OpInfo> table = {
#define NVFUSE_OP_INFO(name, arity, promotion, accepts, params, in_python) \
  OpInfo{OpType::name, #name, arity, Promotion::promotion, accepts, params, in_python},
      NVFUSE_POINTWISE_OPS(NVFUSE_OP_INFO)
#undef NVFUSE_OP_INFO
  };
  return table;
}

const OpInfo& info_of(OpType op) {
  const auto& table = all_pointwise_ops();
  const auto index = static_cast<size_t>(op);
  NVFUSE_ASSERT(index < table.size(), "unknown OpType ", index);
  return table[index];
}

const char* name_of(OpType op) { return info_of(op).name; }

std::optional<OpType> op_type_named(std::string_view name) {
  for (const OpInfo& info : all_pointwise_ops()) {
    if (name == info.name) {
      return info.op;
    }
  }
  return std::nullopt;
}

int first_promoted_operand(OpType op) { return op == OpType::where ? 1 : 0; }

bool accepts_dtype(uint8_t accepts, DataType dtype) {
  switch (category_of(dtype)) {
    case TypeCategory::kBool:
      return accepts & kAcceptBool;
    case TypeCategory::kInt:
      return accepts & kAcceptInt;
    case TypeCategory::kFloat:
      return accepts & kAcceptFloat;
    case TypeCategory::kComplex:
      return accepts & kAcceptComplex;
    case TypeCategory::kNone:
      return false;
  }
  return false;
}

}  // namespace nvfuse
